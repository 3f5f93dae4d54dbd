"""convostore core benchmarks, printed as Markdown tables of times and ratios.

    make bench                      # or: .venvs/core/bin/python benchmarks/core_bench.py [--quick]

Every comparison runs both sides in the same process, interleaved, and reports medians.
PostgreSQL is the server at $CONVOSTORE_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test),
in a scratch schema dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
from convostore import ConversationStore
from report import markdown_report, per_op, pg_schema

CONTENT = {"type": "text", "text": "The quick brown fox jumps over the lazy dog. " * 4}


def median_of(rounds: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(rounds))


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


# -- append against a raw insert ---------------------------------------------------------------


def raw_sqlite(path: str, *, same_schema: bool) -> Callable[[], None]:
    """INSERT + COMMIT of one message row, WAL and synchronous=NORMAL like the store: into a bare
    table with only the primary key, or into convostore's own messages table and indexes."""
    if same_schema:
        ConversationStore(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    table = "convostore_messages" if same_schema else "m"
    if not same_schema:
        conn.execute(
            "CREATE TABLE m (conversation_id TEXT, seq INTEGER, id TEXT, role TEXT, content TEXT,"
            " metadata TEXT, created_at INTEGER, updated_at INTEGER, PRIMARY KEY (conversation_id, seq))"
        )
    seq = iter(range(1, 10**9))

    def insert() -> None:
        conn.execute(
            f"INSERT INTO {table} (conversation_id, seq, id, role, content, metadata,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                "c",
                next(seq),
                f"msg_{uuid.uuid4().hex}",
                "user",
                json.dumps(CONTENT),
                None,
                time.time_ns(),
                None,
            ),
        )  # autocommit: INSERT + COMMIT

    return insert


def raw_postgres(url: str) -> Callable[[], None]:
    """INSERT + COMMIT of one message row into convostore's own messages table."""
    ConversationStore(url).close()
    conn = psycopg.connect(url, prepare_threshold=None)
    seq = iter(range(1, 10**9))

    def insert() -> None:
        conn.execute(
            "INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,"
            " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                "raw",
                next(seq),
                f"msg_{uuid.uuid4().hex}",
                "user",
                json.dumps(CONTENT),
                None,
                time.time_ns(),
                None,
            ),
        )
        conn.commit()

    return insert


def raw_same_work_sqlite(path: str, prefix: str = "raw") -> Callable[[], None]:
    """The work an append does, written by hand with sqlite3, at the store's settings (WAL,
    synchronous=NORMAL, secure_delete): in one BEGIN IMMEDIATE transaction, the conversation's
    row updated (count, next position, last_message_at) and the message row inserted, with every
    index of both tables. A new conversation every 1,000 appends, as for the store."""
    ConversationStore(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "secure_delete=ON"):
        conn.execute(f"PRAGMA {pragma}")
    count = iter(range(10**9))

    def append() -> None:
        n = next(count)
        cid, now = f"{prefix}{n // 1000}", time.time_ns() // 1_000_000
        conn.execute("BEGIN IMMEDIATE")
        if n % 1000 == 0:
            conn.execute(
                "INSERT INTO convostore_conversations VALUES (?, NULL, ?, ?, 0, 1, NULL)",
                [cid, now, now],
            )
        (seq,) = conn.execute(
            "UPDATE convostore_conversations SET message_count = message_count + 1,"
            " next_seq = next_seq + 1, last_message_at = ? WHERE id = ? RETURNING next_seq - 1",
            [now, cid],
        ).fetchone()
        conn.execute(
            "INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [cid, seq, f"msg_{uuid.uuid4().hex}", "user", json.dumps(CONTENT), None, now, None],
        )
        conn.execute("COMMIT")

    return append


def raw_same_work_postgres(url: str, prefix: str = "raw") -> Callable[[], None]:
    """The same work with psycopg as its floor: one statement (the conversation's row updated,
    the message inserted from the position it returns), so one round trip and one commit."""
    ConversationStore(url).close()
    conn = psycopg.connect(url, prepare_threshold=None, autocommit=True)
    count = iter(range(10**9))

    def append() -> None:
        n = next(count)
        cid, now = f"{prefix}{n // 1000}", time.time_ns() // 1_000_000
        if n % 1000 == 0:
            conn.execute(
                "INSERT INTO convostore_conversations VALUES (%s, NULL, %s, %s, 0, 1, NULL)",
                [cid, now, now],
            )
        conn.execute(
            "WITH c AS (UPDATE convostore_conversations SET message_count = message_count + 1,"
            " next_seq = next_seq + 1, last_message_at = %s WHERE id = %s"
            " RETURNING next_seq - 1 AS seq)"
            " INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,"
            " created_at, updated_at) SELECT %s, c.seq, %s, 'user', %s, NULL, %s, NULL FROM c",
            [now, cid, cid, f"msg_{uuid.uuid4().hex}", json.dumps(CONTENT), now],
        )

    return append


def bench_append(store: ConversationStore, raws: list[Callable[[], None]], n: int) -> list[str]:
    count = iter(range(10**9))

    def ours() -> None:  # a new conversation every 1,000 appends, well inside the quota
        store.append_message(
            conversation_id=f"bench{next(count) // 1000}", role="user", content=CONTENT
        )

    sides = [ours, *raws]
    for side in sides:
        side()  # warm up
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(5):  # interleaved rounds
        for side, bucket in zip(sides, times, strict=True):
            bucket.append(per_op(side, n))
    ta, *floors = (statistics.median(t) for t in times)
    return [us(ta), *(f"{us(f)} ({ta / f:.2f}×)" for f in floors)]


def bench_erase(on: ConversationStore, off: ConversationStore, n: int) -> list[str]:
    """delete_conversation of a 50-message conversation: the store (secure_delete, the WAL
    truncated after the commit) against the same delete with secure_delete off and no
    truncation, interleaved."""
    count = iter(range(10**9))

    def fill(store: ConversationStore) -> str:
        cid = f"erase{next(count)}"
        store.append_messages(
            conversation_id=cid, messages=[{"role": "user", "content": CONTENT}] * 50
        )
        return cid

    def erase_on() -> float:
        cid = fill(on)
        start = time.perf_counter()
        on.delete_conversation(conversation_id=cid)
        return time.perf_counter() - start

    def erase_off() -> float:
        cid = fill(off)
        start = time.perf_counter()
        off.backend.write(lambda tx: tx.delete_conversation(cid))
        return time.perf_counter() - start

    times: list[list[float]] = [[], []]
    for _ in range(n):
        times[0].append(erase_on())
        times[1].append(erase_off())
    ton, toff = (statistics.median(t) for t in times)
    return [us(ton), f"{us(toff)} ({ton / toff:.2f}×)"]


# -- page and list costs as the data grows --------------------------------------------------


def fill(store: ConversationStore, cid: str, n: int) -> None:
    batch = [{"role": "user", "content": CONTENT}] * 100
    for _ in range(n // 100):
        store.append_messages(conversation_id=cid, messages=batch)  # type: ignore[arg-type]


def bench_pages(store: ConversationStore, small: int, large: int) -> list[str]:
    fill(store, "small", small)
    fill(store, "large", large)
    # No ANALYZE: the query shapes walk the index without statistics (tests/core/test_plans.py).
    mid = store.get_messages(conversation_id="large", limit=1, order="desc")[0].message_id

    def page(cid: str) -> float:
        return per_op(lambda: store.get_messages(conversation_id=cid, limit=20, order="desc"), 200)

    ts = median_of(5, lambda: page("small"))
    tl = median_of(5, lambda: page("large"))
    tc = median_of(
        5,
        lambda: per_op(
            lambda: store.get_messages(conversation_id="large", limit=20, before=mid), 200
        ),
    )
    return [us(ts), us(tl), f"{tl / ts:.2f}×", us(tc)]


def bench_list(store: ConversationStore, small: int, large: int) -> list[str]:
    for user, n in (("u_small", small), ("u_large", large)):
        for i in range(n):
            store.append_message(
                conversation_id=f"{user}-{i}", role="user", content="x", user_id=user
            )
    cursor = store.list_conversations(user_id="u_large", limit=20).next_cursor

    def listing(user: str) -> float:
        return per_op(lambda: store.list_conversations(user_id=user, limit=20), 200)

    ts = median_of(5, lambda: listing("u_small"))
    tl = median_of(5, lambda: listing("u_large"))
    tc = median_of(
        5, lambda: per_op(lambda: store.list_conversations(user_id="u_large", after=cursor), 200)
    )
    return [us(ts), us(tl), f"{tl / ts:.2f}×", us(tc)]


# -- reads against the same rows read by hand ---------------------------------------------------

_BY_HAND_MESSAGES = (
    "SELECT seq, id, role, content, metadata, created_at, updated_at FROM convostore_messages"
    " WHERE conversation_id = {p} ORDER BY seq {order} LIMIT 20"
)
_BY_HAND_LISTING = (
    "SELECT id, user_id, created_at, last_message_at, message_count, metadata"
    " FROM convostore_conversations WHERE user_id = {p}"
    " ORDER BY last_message_at DESC, id DESC LIMIT 21"
)


def _decoded_messages(rows: list[tuple]) -> list[tuple]:  # type: ignore[type-arg]
    return [(r[1], r[2], json.loads(r[3]), r[4] and json.loads(r[4]), r[5]) for r in rows]


def by_hand_reads(url: str) -> dict[str, Callable[[], object]]:
    """The rows each read returns, fetched with the driver alone (one statement, the same
    index) and their JSON decoded: the floor the store's reads are measured against."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)

        def run(sql: str, arg: str, order: str = "") -> list[tuple]:  # type: ignore[type-arg]
            return conn.execute(sql.format(p="?", order=order), (arg,)).fetchall()
    else:
        pg = psycopg.connect(url, autocommit=True)

        def run(sql: str, arg: str, order: str = "") -> list[tuple]:  # type: ignore[type-arg]
            return pg.execute(sql.format(p="%s", order=order).encode(), (arg,)).fetchall()

    return {
        "asc": lambda: _decoded_messages(run(_BY_HAND_MESSAGES, "page", "ASC")),
        "desc": lambda: _decoded_messages(run(_BY_HAND_MESSAGES, "page", "DESC")),
        "list": lambda: [
            (*r[:5], r[5] and json.loads(r[5])) for r in run(_BY_HAND_LISTING, "lister")
        ],
    }


def bench_reads(url: str, store_url: str | None = None) -> list[list[str]]:
    """The store's reads against ``by_hand_reads``; ``store_url`` opens the store another way
    on the same database (PostgreSQL with prepared statements, as psycopg's own default)."""
    store = ConversationStore(url)
    fill(store, "page", 1_000)
    for i in range(200):
        store.update_conversation(conversation_id=f"l{i}", metadata={"n": i}, user_id="lister")
    if store_url is not None:
        store.close()
        store = ConversationStore(store_url)
    floor = by_hand_reads(url)
    ours: dict[str, Callable[[], object]] = {
        "asc": lambda: store.get_messages(conversation_id="page", limit=20),
        "desc": lambda: store.get_messages(conversation_id="page", limit=20, order="desc"),
        "list": lambda: store.list_conversations(user_id="lister", limit=20),
    }
    names = {
        "asc": "get_messages(limit=20)",
        "desc": 'get_messages(limit=20, order="desc")',
        "list": "list_conversations(user_id=..., limit=20)",
    }
    rows = []
    for key, name in names.items():
        mine, theirs = [], []
        for _ in range(9):  # interleaved rounds, medians
            mine.append(per_op(ours[key], 300))
            theirs.append(per_op(floor[key], 300))
        a, b = statistics.median(mine), statistics.median(theirs)
        rows.append([name, us(a), us(b), f"{a / b:.2f}×"])
    store.close()
    return rows


def section_reads(tmp: str, q: bool) -> None:
    rows = [["SQLite", *r] for r in bench_reads(f"sqlite:///{tmp}/r.db")]
    with pg_schema() as url:
        rows += [["PostgreSQL", *r] for r in bench_reads(url)]
    with pg_schema() as url:
        # psycopg prepares a statement run 5 times on a connection: the floor does; the store
        # does with ?prepare_threshold=5 (not by default: a transaction-mode pooler, README)
        prepared = f"{url}&prepare_threshold=5"
        rows += [["PostgreSQL, ?prepare_threshold=5", *r] for r in bench_reads(url, prepared)]
    table(
        "reads against the same rows read by hand (the driver, one statement, JSON decoded)",
        ["backend", "read", "convostore", "by hand", "ratio"],
        rows,
    )


# -- fork against one read ---------------------------------------------------------------------


def bench_fork(store: ConversationStore, n: int, rounds: int) -> list[str]:
    """fork_conversation of an ``n``-message conversation (a copy inside the database, in one
    transaction) against one get_history of it, interleaved; each fork deleted untimed."""
    fill(store, "source", n)
    count = iter(range(10**9))

    def history() -> float:
        start = time.perf_counter()
        store.get_history(conversation_id="source")
        return time.perf_counter() - start

    def fork() -> float:
        new = f"fork{next(count)}"
        start = time.perf_counter()
        store.fork_conversation(conversation_id="source", new_conversation_id=new)
        took = time.perf_counter() - start
        store.delete_conversation(conversation_id=new)
        return took

    history(), fork()  # warm up
    reads, forks = [], []
    for _ in range(rounds):
        reads.append(history())
        forks.append(fork())
    tr, tf = statistics.median(reads), statistics.median(forks)
    return [f"{tr * 1e3:,.1f} ms", f"{tf * 1e3:,.1f} ms", f"{tf / tr:.2f}×"]


# -- concurrent writers --------------------------------------------------------------------------


def _writer(url: str, name: str, n: int, shared: bool, start: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    with ConversationStore(url) as store:
        store.get_conversation(conversation_id="x")  # connect before the clock starts
        start.wait()
        cid = "shared" if shared else name
        for _ in range(n):
            store.append_message(conversation_id=cid, role="user", content=CONTENT)


def _raw_writer(url: str, name: str, n: int, shared: bool, start: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    """The same work as an append, by hand (``raw_same_work_*``), one conversation each."""
    if url.startswith("sqlite:///"):
        append = raw_same_work_sqlite(url[len("sqlite:///") :], prefix=name)
    else:
        append = raw_same_work_postgres(url, prefix=name)
    append()  # connect (and create the first conversation) before the clock starts
    start.wait()
    for _ in range(n):
        append()


def bench_writers(
    url: str, writers: int, n: int, shared: bool, target: Callable[..., None] = _writer
) -> float:
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(target=target, args=(url, f"w{i}-{uuid.uuid4().hex[:6]}", n, shared, start))
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(1.5)  # let every writer open its connection
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
    return writers * n / (time.perf_counter() - t0)


def section_append(tmp: str, q: bool) -> None:
    n = 300 if q else 2000
    rows = []
    with ConversationStore(f"sqlite:///{tmp}/a.db") as store:
        floors = [
            raw_same_work_sqlite(f"{tmp}/raw-work.db"),
            raw_sqlite(f"{tmp}/raw-same.db", same_schema=True),
            raw_sqlite(f"{tmp}/raw-bare.db", same_schema=False),
        ]
        rows.append(["SQLite file (WAL, synchronous=NORMAL)", *bench_append(store, floors, n)])
    with pg_schema() as url, ConversationStore(url) as store, pg_schema() as raw_url:
        floors = [raw_same_work_postgres(raw_url), raw_postgres(url)]
        rows.append(["PostgreSQL", *bench_append(store, floors, n // 2), "-"])
    table(
        "append_message against raw sqlite3 / psycopg doing the same work (same durability)",
        [
            "backend",
            "append_message",
            "raw, the same work in one transaction (ratio)",
            "raw, the message row alone (ratio)",
            "raw, bare table (ratio)",
        ],
        rows,
    )
    table(
        "SQLite: what each thing the store adds to an append costs (the store without it;"
        " medians of interleaved rounds)",
        ["append_message", "time", "what it costs (share)"],
        bench_append_costs(tmp, 300 if q else 2000),
    )
    section_erase(tmp, q)


def bench_append_costs(tmp: str, n: int) -> list[list[str]]:
    """What each thing the store adds to an SQLite append costs: the store against itself
    with one of them taken away (interleaved medians), and the parts it runs in Python alone."""
    from convostore.backends import sqlite as sqlite_backend

    stores = {name: ConversationStore(f"sqlite:///{tmp}/cost-{name}.db") for name in _COSTS}
    stores["secure_delete"].backend.read(lambda tx: tx.execute("PRAGMA secure_delete=OFF"))
    queue = stores["writers_lock"].backend._queue  # type: ignore[attr-defined]
    stores["writers_lock"].backend._queue = None  # type: ignore[attr-defined]
    batch = sqlite_backend.INDEX_BATCH
    unwrapped = getattr(ConversationStore.append_message, "__wrapped__", None)
    count = iter(range(10**9))

    def side(name: str) -> Callable[[], None]:
        store = stores[name]
        call = store.append_message
        if name == "telemetry" and unwrapped is not None:
            call = unwrapped.__get__(store)

        def append() -> None:
            sqlite_backend.INDEX_BATCH = 10**9 if name == "search_index" else batch
            call(conversation_id=f"cost{next(count) // 1000}", role="user", content=CONTENT)

        return append

    sides = [side(name) for name in _COSTS]
    for f in sides:
        f()
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(7):
        for f, bucket in zip(sides, times, strict=True):
            bucket.append(per_op(f, n))
    sqlite_backend.INDEX_BATCH = batch
    stores["writers_lock"].backend._queue = queue  # type: ignore[attr-defined]
    stores["search_index"].backend.index_pending()  # type: ignore[attr-defined]
    store = stores["store"]
    item = {"role": "user", "content": CONTENT}
    prepare = statistics.median(
        per_op(lambda: store._prepare(item, 0, "msg_x"), 2000) for _ in range(7)
    )
    read = statistics.median(
        per_op(lambda: store.backend.read(lambda tx: tx.conversation("cost0")), 2000)
        for _ in range(7)
    )
    for s in stores.values():
        s.close()
    ours, *others = (statistics.median(t) for t in times)
    rows = [["append_message (all of it)", us(ours), ""]]
    for what, t in zip(list(_COSTS.values())[1:], others, strict=True):
        rows.append([what, us(t), f"{us(ours - t)} ({(ours - t) / ours:.0%})"])
    rows.append(["its validation and JSON (`_prepare`, alone)", "", us(prepare)])
    rows.append(["a read of the conversation's row by id (alone, its own read)", "", us(read)])
    rows.append(["the changes row", "", "none: an append's change is its message's row"])
    return rows


_COSTS = {
    "store": "",
    "search_index": "without the search index's batches (every 256 appends)",
    "writers_lock": "without the writers' lock (the flock queue)",
    "secure_delete": "with secure_delete off",
    "telemetry": "without the telemetry check (the method unwrapped)",
}


def section_erase(tmp: str, q: bool) -> None:
    """What secure_delete and the WAL truncation after an erasing call cost on SQLite."""
    with (
        ConversationStore(f"sqlite:///{tmp}/on.db") as on,
        ConversationStore(f"sqlite:///{tmp}/off.db") as off,
    ):
        off.backend.read(lambda tx: tx.execute("PRAGMA secure_delete=OFF"))
        count = iter(range(10**9))

        def append_off() -> None:
            cid = f"bench{next(count) // 1000}"
            off.append_message(conversation_id=cid, role="user", content=CONTENT)

        append = bench_append(on, [append_off], 300 if q else 2000)
        erase = bench_erase(on, off, 20 if q else 100)
    table(
        "SQLite: the cost of secure_delete (and of the WAL truncation after an erasing call)",
        ["operation", "store (secure_delete on)", "secure_delete off (ratio on/off)"],
        [
            ["append_message", *append],
            ["delete_conversation of 50 messages (off: no WAL truncation either)", *erase],
        ],
    )


def on_both(path: str, measure: Callable[[ConversationStore], list[str]]) -> list[list[str]]:
    """One table row per backend: ``measure`` on an SQLite file, then on a PostgreSQL schema."""
    with ConversationStore(f"sqlite:///{path}") as store:
        rows = [["SQLite", *measure(store)]]
    with pg_schema() as url, ConversationStore(url) as store:
        rows.append(["PostgreSQL", *measure(store)])
    return rows


def section_pages(tmp: str, q: bool) -> None:
    large = 2_000 if q else 10_000
    rows = on_both(f"{tmp}/p.db", lambda store: bench_pages(store, 100, large))
    table(
        f"get_messages(limit=20): 100 against {large:,} messages in the conversation",
        ["backend", "100 msgs", f"{large:,} msgs", "ratio", f"before= cursor at {large:,}"],
        rows,
    )
    size = sum(p.stat().st_size for p in Path(tmp).glob("p.db*"))
    print(
        f"\nSQLite file holding {large + 100:,} messages of {len(json.dumps(CONTENT))} bytes: {size / 1e6:.1f} MB"
    )


def section_list(tmp: str, q: bool) -> None:
    large = 5_000 if q else 100_000
    rows = on_both(f"{tmp}/l.db", lambda store: bench_list(store, 1_000, large))
    table(
        f"list_conversations(user_id=..., limit=20): a user with 1,000 against {large:,} conversations",
        ["backend", "1,000", f"{large:,}", "ratio", "after= cursor"],
        rows,
    )


def section_fork(tmp: str, q: bool) -> None:
    n = 2_000 if q else 10_000
    rows = on_both(f"{tmp}/f.db", lambda store: bench_fork(store, n, 3 if q else 7))
    table(
        f"fork_conversation of a {n:,}-message conversation against one get_history of it"
        " (medians, interleaved)",
        ["backend", "get_history", "fork_conversation", "fork / get_history"],
        rows,
    )


def section_writers(tmp: str, q: bool) -> None:
    per_writer = 150 if q else 500
    rows = []
    for name in ("SQLite", "PostgreSQL"):
        for shared in (False, True):
            cells = []
            for writers in (1, 2, 4, 8):
                if name == "SQLite":
                    url = f"sqlite:///{tmp}/w{uuid.uuid4().hex}.db"
                    ConversationStore(url).close()
                    cells.append(bench_writers(url, writers, per_writer, shared))
                else:
                    with pg_schema() as url:
                        ConversationStore(url).close()
                        cells.append(bench_writers(url, writers, per_writer, shared))
            label = f"{name}, {'one shared conversation' if shared else 'a conversation each'}"
            rows.append([label, *(f"{c:,.0f}/s" for c in cells), f"{cells[-1] / cells[0]:.2f}×"])
        floor = []
        for writers in (1, 2, 4, 8):
            if name == "SQLite":
                url = f"sqlite:///{tmp}/w{uuid.uuid4().hex}.db"
                ConversationStore(url).close()
                floor.append(bench_writers(url, writers, per_writer, False, _raw_writer))
            else:
                with pg_schema() as url:
                    ConversationStore(url).close()
                    floor.append(bench_writers(url, writers, per_writer, False, _raw_writer))
        rows.append(
            [
                f"{name}, the same work by hand (floor), a conversation each",
                *(f"{c:,.0f}/s" for c in floor),
                f"{floor[-1] / floor[0]:.2f}×",
            ]
        )
    table(
        f"append throughput with concurrent writer processes ({per_writer} appends each)",
        ["backend", "1 writer", "2", "4", "8", "8 vs 1"],
        rows,
    )


SECTIONS = {
    "append": section_append,
    "pages": section_pages,
    "reads": section_reads,
    "list": section_list,
    "fork": section_fork,
    "writers": section_writers,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("sections", nargs="*", choices=[*SECTIONS, []], help="default: all")
    args = parser.parse_args()
    print(
        f"convostore core benchmarks ({'quick' if args.quick else 'full'}); {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sections or SECTIONS:
            SECTIONS[name](tmp, args.quick)


if __name__ == "__main__":
    with markdown_report("convostore core benchmarks", ["convostore", "psycopg"]):
        main()
