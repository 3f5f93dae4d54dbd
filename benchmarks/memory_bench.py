"""Memory stores against the LangGraph store on the same database, printed as Markdown tables.

    make bench-memory    # or: .venvs/langgraph/bin/python benchmarks/memory_bench.py [--quick]

A memory write keeps a version, a counter and a store row exact; the floor is a key-value write
with none of that: ``ConvostoreStore.put`` (convostore-langgraph's ``BaseStore``) on the same
backend. An update is also timed against the same writes by hand (``update_by_hand``; on
PostgreSQL one statement, which the server plans on every call, where the store calls its
function ``convostore_memory_write``, planned once per connection). On SQLite each side's
write alone by hand (a version row inserted, ``put``'s upsert) shows what SQLite itself
charges for them. Both sides run interleaved in one process; medians of rounds.
``list_memories(limit=20)`` is timed in a store of 1,000 entries and in one of ``--entries``
(it must stay flat). On SQLite the bytes an update and a ``put`` write are counted too (what
the machine's load does not move).
PostgreSQL is the server at $CONVOSTORE_TEST_PG, in a scratch schema dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count

import psycopg
from convostore import ConversationStore
from convostore_langgraph import ConvostoreStore
from report import markdown_report, pg_schema

TEXT = ("Notes on the deploy process. " * 80)[:2048]  # a 2 KB entry


@contextmanager
def backend(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    with pg_schema() as url:
        yield url


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def fill(store: ConversationStore, kv: ConvostoreStore, sid: str, entries: int) -> None:
    """``entries`` memory entries and as many LangGraph items, spread over directories."""
    for i in range(entries):
        path = f"dir{i % 100:02}/note{i:07}.md"
        store.create_memory(sid, path, TEXT)
        kv.put(("bench", sid), path, {"text": TEXT})


def update_by_hand(kind: str, url: str, sid: str, eid: str) -> Callable[[], None]:
    """What an update writes, by hand as its floor, with none of the store's checks: the
    store's sequence and counters moved, the entry pointed at its next version, the version
    (with the content) inserted; in one BEGIN IMMEDIATE transaction on SQLite (at the store's
    settings), in one statement on PostgreSQL (one round trip, one commit)."""
    texts = [TEXT.encode(), TEXT[::-1].encode()]
    n = count(2)
    if kind == "sqlite":
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "secure_delete=ON"):
            conn.execute(f"PRAGMA {pragma}")

        def by_hand() -> None:
            now, body = time.time_ns() // 1_000_000, texts[next(n) % 2]
            conn.execute("BEGIN IMMEDIATE")
            (seq,) = conn.execute(
                "UPDATE convostore_memory_stores SET next_seq = next_seq + 1, updated_at = ?"
                " WHERE id = ? RETURNING next_seq - 1",
                [now, sid],
            ).fetchone()
            (version,) = conn.execute(
                "UPDATE convostore_memory_entries SET version = version + 1, version_seq = ?,"
                " updated_at = ? WHERE store_id = ? AND id = ? RETURNING version",
                [seq, now, sid, eid],
            ).fetchone()
            conn.execute(
                "INSERT INTO convostore_memory_versions VALUES"
                " (?, ?, ?, ?, ?, 'update', 'hot.md', ?, ?, NULL, ?)",
                [sid, seq, f"memver_{uuid.uuid4().hex[:32]}", eid, version, len(body), now, body],
            )
            conn.execute("COMMIT")

        return by_hand
    pg = psycopg.connect(url, prepare_threshold=None, autocommit=True)

    def by_hand_pg() -> None:
        now, body = time.time_ns() // 1_000_000, texts[next(n) % 2]
        pg.execute(
            "WITH s AS (UPDATE convostore_memory_stores SET next_seq = next_seq + 1,"
            " updated_at = %(now)s WHERE id = %(sid)s RETURNING next_seq - 1 AS seq),"
            " e AS (UPDATE convostore_memory_entries SET version = version + 1,"
            " version_seq = (SELECT seq FROM s), updated_at = %(now)s"
            " WHERE store_id = %(sid)s AND id = %(eid)s RETURNING version)"
            " INSERT INTO convostore_memory_versions SELECT %(sid)s, s.seq, %(vid)s, %(eid)s,"
            " e.version, 'update', 'hot.md', %(size)s, %(now)s, NULL, %(body)s FROM s, e",
            {
                "now": now,
                "sid": sid,
                "eid": eid,
                "vid": f"memver_{uuid.uuid4().hex[:32]}",
                "size": len(body),
                "body": body,
            },
        )

    return by_hand_pg


def sqlite_floors(url: str, sid: str, eid: str) -> dict[str, Callable[[], None]]:
    """SQLite's own cost of each side's write, by hand in autocommit at the store's settings:
    a version row inserted (what any update that keeps its versions adds: a new 2 KB row and
    its two index entries) against ``put``'s upsert of the same key (a 2 KB row rewritten in
    place)."""
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "secure_delete=ON"):
        conn.execute(f"PRAGMA {pragma}")
    texts = [TEXT.encode(), TEXT[::-1].encode()]
    values = [json.dumps({"text": TEXT}), json.dumps({"text": TEXT[::-1]})]
    n = count(10**9)  # sequence numbers above the store's own

    def version_insert() -> None:
        seq, now = next(n), time.time_ns() // 1_000_000
        conn.execute(
            "INSERT INTO convostore_memory_versions VALUES"
            " (?, ?, ?, ?, ?, 'update', 'hot.md', ?, ?, NULL, ?)",
            [sid, seq, f"memver_{uuid.uuid4().hex[:32]}", eid, seq, 2048, now, texts[seq % 2]],
        )

    def upsert() -> None:
        now = time.time_ns() // 1_000
        conn.execute(
            "INSERT INTO lg_store (prefix, key, value, created_at, updated_at, expires_at,"
            " ttl_minutes) VALUES ('floor', 'hot.md', ?, ?, ?, NULL, NULL)"
            " ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            [values[next(n) % 2], now, now],
        )

    return {"version insert by hand": version_insert, "upsert by hand": upsert}


def measure(kind: str, entries: int, rounds: int, ops: int) -> list[list[str]]:
    with backend(kind) as url, ConversationStore(url) as store:
        kv = ConvostoreStore(store)
        small = store.create_memory_store("small").memory_store_id
        large = store.create_memory_store("large").memory_store_id
        started = time.perf_counter()
        fill(store, kv, small, 1_000)
        fill(store, kv, large, entries)
        loaded = time.perf_counter() - started
        if kind == "postgresql":
            store.backend.write(lambda tx: tx.execute("ANALYZE"))

        work = store.create_memory_store("work").memory_store_id
        fresh = count()
        entry = store.create_memory(work, "hot.md", TEXT)
        version = [entry.version]
        kv.put(("work",), "hot.md", {"text": TEXT})

        def create() -> None:
            store.create_memory(work, f"new/{next(fresh)}.md", TEXT)

        def put_new() -> None:
            kv.put(("work",), f"new/{next(fresh)}.md", {"text": TEXT})

        texts = [TEXT, TEXT[::-1]]  # every write changes the value, on both sides

        def update() -> None:
            text = texts[version[0] % 2]
            version[0] = store.update_memory(work, entry.entry_id, text, version[0]).version

        hand = store.create_memory_store("by hand").memory_store_id
        by_hand_entry = store.create_memory(hand, "hot.md", TEXT).entry_id
        by_hand = update_by_hand(kind, url, hand, by_hand_entry)

        def put_same() -> None:
            texts.reverse()
            kv.put(("work",), "hot.md", {"text": texts[0]})

        floors = sqlite_floors(url, hand, by_hand_entry) if kind == "sqlite" else {}
        sides: dict[str, Callable[[], object]] = {
            **floors,
            "create_memory": create,
            "put (new key)": put_new,
            "update_memory": update,
            "put (same key)": put_same,
            "update by hand": by_hand,
            "get_memory": lambda: store.get_memory(work, entry.entry_id),
            "get": lambda: kv.get(("work",), "hot.md"),
            "list_memories(20), 1,000": lambda: store.list_memories(small, limit=20),
            f"list_memories(20), {entries:,}": lambda: store.list_memories(large, limit=20),
            "search(limit=20), 1,000": lambda: kv.search(("bench", small), limit=20),
            f"search(limit=20), {entries:,}": lambda: kv.search(("bench", large), limit=20),
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        # SQLite indexes memory writes a batch at a time: each side's rounds end with the batch
        # of what they left, timed with them (not paid by the next side)
        settle = getattr(store.backend, "index_pending", lambda: None)
        for _ in range(rounds):
            for name, fn in sides.items():
                started = time.perf_counter()
                for _ in range(ops):
                    fn()
                if name in ("create_memory", "update_memory"):
                    settle()
                times[name].append((time.perf_counter() - started) / ops)
        med = {name: statistics.median(t) for name, t in times.items()}
        big = f"{entries:,}"
        settle()
        written = sqlite_bytes(url, update, put_same, work) if kind == "sqlite" else []
        return [
            [kind, "create a 2 KB entry", us(med["create_memory"]), us(med["put (new key)"]),
             f"{med['create_memory'] / med['put (new key)']:.2f}×"],
            [kind, "update it (a new version)", us(med["update_memory"]),
             us(med["put (same key)"]), f"{med['update_memory'] / med['put (same key)']:.2f}×"],
            [kind, f"update, against the same writes by hand ({'sqlite3' if kind == 'sqlite' else 'psycopg'})",
             us(med["update_memory"]), us(med["update by hand"]),
             f"{med['update_memory'] / med['update by hand']:.2f}×"],
            *([[kind, "the version's insert alone / `put`'s upsert, both by hand (sqlite3)",
                us(med["version insert by hand"]), us(med["upsert by hand"]),
                f"{med['version insert by hand'] / med['upsert by hand']:.2f}×"]] if floors else []),
            [kind, "get it", us(med["get_memory"]), us(med["get"]),
             f"{med['get_memory'] / med['get']:.2f}×"],
            [kind, f"list 20 of {big} / of 1,000 (flat?)",
             f"{us(med[f'list_memories(20), {big}'])} / {us(med['list_memories(20), 1,000'])}"
             f" = {med[f'list_memories(20), {big}'] / med['list_memories(20), 1,000']:.2f}×",
             f"{us(med[f'search(limit=20), {big}'])} / {us(med['search(limit=20), 1,000'])}"
             f" = {med[f'search(limit=20), {big}'] / med['search(limit=20), 1,000']:.2f}×",
             f"{med[f'list_memories(20), {big}'] / med[f'search(limit=20), {big}']:.2f}×"],
            *written,
            [kind, f"load {entries + 1_000:,} entries and items (setup)", f"{loaded:.0f} s",
             "", ""],
        ]  # fmt: skip


def wchar() -> int:
    """Bytes this process has written so far (``/proc/self/io``: the WAL's frames, the
    checkpoints' pages), which the machine's load does not move."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar"))


def sqlite_bytes(
    url: str, update: Callable[[], None], put: Callable[[], None], sid: str
) -> list[list[str]]:
    """Bytes written a call by an update and by ``put`` (1,024 calls each: four of the index's
    batches), and the bytes a version takes on disk (its row and its two index entries)."""
    calls, per = 1_024, {}
    for name, fn in (("update", update), ("put", put)):
        before = wchar()
        for _ in range(calls):
            fn()
        per[name] = (wchar() - before) / calls
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    [(versions,)] = conn.execute(
        "SELECT count(*) FROM convostore_memory_versions WHERE store_id = ?", [sid]
    )
    [(size,)] = conn.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name IN ('convostore_memory_versions',"
        " 'sqlite_autoindex_convostore_memory_versions_1', 'convostore_memory_versions_by_entry')"
    )
    [(total,)] = conn.execute("SELECT count(*) FROM convostore_memory_versions")
    conn.close()
    return [
        ["sqlite", "update: bytes written a call (`/proc/self/io`)", f"{per['update']:,.0f} B",
         f"{per['put']:,.0f} B", f"{per['update'] / per['put']:.2f}×"],
        ["sqlite", f"a version on disk (its row and two index entries; {versions:,} of the"
         " hot entry)", f"{size / total:,.0f} B", "", ""],
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 entries, fewer rounds")
    args = parser.parse_args()
    entries = 10_000 if args.quick else args.entries
    rounds, ops = (5, 100) if args.quick else (9, 200)
    rows = []
    for kind in ("sqlite", "postgresql"):
        rows += measure(kind, entries, rounds, ops)
    print(
        f"\n### Memory stores against the LangGraph store ({time.strftime('%Y-%m-%d')},"
        f" medians of {rounds} rounds of {ops})\n"
    )
    print("| backend | operation | memory store | LangGraph store (`put`/`get`/`search`) | ratio |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    with markdown_report(
        "Memory stores against the LangGraph store",
        ["convostore", "convostore-langgraph", "psycopg"],
    ):
        main()
