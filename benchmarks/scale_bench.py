"""The store at a product's size: the calls of a chat turn on a 10,000,000-message store (100,000
conversations) against the same calls on a 10,000-message store, side by side, as ratios; and
the bytes a message takes on disk (table and indexes, the search index included) against its
text.

    make bench-scale   # or: .venvs/langgraph/bin/python benchmarks/scale_bench.py \
                       #       [--size 10m] [--backends postgresql,sqlite] [--keep]

``--keep`` keeps the large store (PostgreSQL: the schema ``convostore_scale_<size>``; SQLite:
the file ``convostore-scale-<size>.db`` in the temp folder) with what its load took, and a later
run with ``--keep`` measures it again without loading it (10,000,000 messages take about half
an hour to load on PostgreSQL); drop it by hand afterwards.

Both stores are filled the same way, in bulk, once the store has created its tables: on
PostgreSQL with ``COPY`` (the secondary indexes dropped first and built again after, then
``VACUUM ANALYZE``), on SQLite with ``executemany`` in transactions of 100,000 rows (the
secondary indexes built after, then ``ANALYZE``). Every column the store writes is filled as
the store writes it, the search index too (PostgreSQL's ``search_text`` and its pg_trgm index,
SQLite's FTS5 rows and ``search_rid``), so the result is a store like any other: the run opens
it with ``ConversationStore`` and checks a conversation's count and its last message.

Sizes: each conversation holds 100 messages (alternately a user's
and an assistant's), each conversation owned by one of ``conversations / 5`` users (5 each),
started at its own moment of one year, a message every 30 s. A user's message is 3 to 25 words,
an assistant's 10 to 70 words, of a vocabulary of 5,000 words (about 160 bytes of text a
message on average, as short chat turns); 20,000 distinct texts of each role are drawn once
and reused.

Each call goes to a conversation (or user) drawn at random, a new one each call, on each
store: ``append_message``, ``get_messages(limit=20)`` newest first and before the message in
the middle of the conversation, ``list_conversations(user_id=..., limit=20)``, and a LangGraph
step (``ConvostoreSaver`` on the store: one ``invoke`` of a one-node graph, a human message in
and an AI message out, on a thread per round; the thread is a conversation of the store).
Rounds alternate which store goes first; the figure is the median. On PostgreSQL the run
then appends 300 more messages on each store and counts what a call wrote to the WAL (bytes,
records, full-page images: the server's ``pg_stat_wal``, every session's) and the pages the
store's tables and indexes read from outside shared buffers (``pg_statio_user_tables``).
PostgreSQL is $CONVOSTORE_TEST_PG, in scratch schemas dropped afterwards; SQLite files in a
temporary folder, removed afterwards (but for ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from convostore import ConversationStore
from convostore.backends.search import MARK_FROM_SCAN, RID_BITS, bucket
from convostore.search_text import index_text
from psycopg import sql
from report import PG, markdown_report, pg_schema

PER_CONVERSATION = 100
PER_USER = 5
START_MS = 1_735_689_600_000  # 2025-01-01
YEAR_MS = 365 * 24 * 3600 * 1000
STEP_MS = 30_000
POOL = 20_000
ROUNDS = 7
CALLS = 100
SMALL = 10_000


def sizes(text: str) -> int:
    """``10m``, ``100k`` or a number of messages."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    number = int(text[:-1] if scale > 1 else text) * scale
    if number < SMALL or number % PER_CONVERSATION:
        raise argparse.ArgumentTypeError(f"--size must be a multiple of 100, at least {SMALL:,}")
    return number


class Texts:
    """The messages' texts, drawn once: (content as stored, its search text, text bytes)."""

    def __init__(self) -> None:
        rng = random.Random(30)
        letters = "abcdefghijklmnopqrstuvwyz"
        words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(5_000)]
        self.user = [self._entry(rng, words, 3, 25) for _ in range(POOL)]
        self.assistant = [self._entry(rng, words, 10, 70) for _ in range(POOL)]

    @staticmethod
    def _entry(rng: random.Random, words: list[str], low: int, high: int) -> tuple[str, str, int]:
        text = " ".join(rng.choices(words, k=rng.randint(low, high))).capitalize() + "."
        content = json.dumps(text, ensure_ascii=False, separators=(",", ":"))
        return content, index_text(content), len(text.encode())

    def of(self, conversation: int, seq: int) -> tuple[str, str, str, int]:
        """(role, content, search text, text bytes) of a message."""
        role, pool = ("user", self.user) if seq % 2 else ("assistant", self.assistant)
        return (role, *pool[(conversation * 7919 + seq * 104_729) % POOL])


class Layout:
    """Where each message of a store of ``messages`` is: conversations, owners, times, ids."""

    def __init__(self, messages: int) -> None:
        self.conversations = messages // PER_CONVERSATION
        self.users = max(1, self.conversations // PER_USER)
        self.spacing = YEAR_MS // self.conversations

    def cid(self, c: int) -> str:
        return f"conv_{c:08d}"

    def uid(self, c: int) -> str:
        return f"user_{c % self.users:07d}"

    def at(self, c: int, seq: int) -> int:
        return START_MS + c * self.spacing + seq * STEP_MS

    def mid(self, c: int, seq: int) -> str:
        return f"msg_{self.at(c, seq):012x}{c * PER_CONVERSATION + seq:020x}"

    def conversation_row(self, c: int) -> tuple[Any, ...]:
        last = self.at(c, PER_CONVERSATION)
        n = PER_CONVERSATION
        return (self.cid(c), self.uid(c), self.at(c, 1), last, n, n + 1, None)


# -- bulk loads ---------------------------------------------------------------------------------


def load_postgresql(url: str, layout: Layout, texts: Texts) -> tuple[float, int, str]:
    """COPY the store's rows in; (seconds, text bytes, the time of each phase)."""
    ConversationStore(url).close()  # the tables, as the store makes them
    start, text_bytes = time.monotonic(), 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '2GB'")
        indexes = conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema()"
            " AND i.tablename IN ('convostore_messages', 'convostore_conversations')"
            " AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conname = i.indexname)"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
        with conn.cursor() as cur:
            with cur.copy(
                "COPY convostore_conversations (id, user_id, created_at, last_message_at,"
                " message_count, next_seq, metadata) FROM STDIN"
            ) as copy:
                for c in range(layout.conversations):
                    copy.write_row(layout.conversation_row(c))
            with cur.copy(
                "COPY convostore_messages (conversation_id, seq, id, role, content, metadata,"
                " created_at, updated_at, search_text) FROM STDIN"
            ) as copy:
                for c in range(layout.conversations):
                    cid, lines = layout.cid(c), []
                    for seq in range(1, PER_CONVERSATION + 1):
                        role, content, search, size = texts.of(c, seq)
                        text_bytes += size
                        lines.append(
                            f"{cid}\t{seq}\t{layout.mid(c, seq)}\t{role}\t{content}\t\\N\t"
                            f"{layout.at(c, seq)}\t\\N\t{search}\n"
                        )
                    copy.write("".join(lines))
        copied = time.monotonic()
        for _, definition in indexes:
            conn.execute(definition)
        indexed = time.monotonic()
        conn.execute("VACUUM ANALYZE convostore_messages")
        conn.execute("VACUUM ANALYZE convostore_conversations")
    end = time.monotonic()
    phases = (
        f"COPY {copied - start:.0f} s, the indexes {indexed - copied:.0f} s,"
        f" VACUUM ANALYZE {end - indexed:.0f} s"
    )
    return end - start, text_bytes, phases


def load_sqlite(path: str, layout: Layout, texts: Texts) -> tuple[float, int, str]:
    """executemany the store's rows in, 100,000 a transaction; (seconds, text bytes, the time
    of each phase)."""
    ConversationStore(f"sqlite:///{path}").close()
    start, text_bytes = time.monotonic(), 0
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-512000")
    indexes = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        " AND tbl_name IN ('convostore_messages', 'convostore_conversations')"
    ).fetchall()
    for name, _ in indexes:
        conn.execute(f"DROP INDEX {name}")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO convostore_conversations VALUES (?, ?, ?, ?, ?, ?, ?)",
        (layout.conversation_row(c) for c in range(layout.conversations)),
    )
    conn.execute("COMMIT")
    taken: dict[int, int] = {}  # an index row's number: the minute, then a count in it
    batch = 100_000 // PER_CONVERSATION
    for first in range(0, layout.conversations, batch):
        messages, index = [], []
        for c in range(first, min(first + batch, layout.conversations)):
            cid = layout.cid(c)
            for seq in range(1, PER_CONVERSATION + 1):
                role, content, search, size = texts.of(c, seq)
                text_bytes += size
                at = layout.at(c, seq)
                minute = bucket(at)
                rid = taken.get(minute, minute << RID_BITS)
                taken[minute] = rid + 1
                messages.append((cid, seq, layout.mid(c, seq), role, content, at, rid))
                index.append((rid, search, cid, seq))
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO convostore_messages (conversation_id, seq, id, role, content, metadata,"
            " created_at, updated_at, search_rid) VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?)",
            messages,
        )
        conn.executemany(
            "INSERT INTO convostore_search (rowid, text, conversation_id, seq) VALUES (?, ?, ?, ?)",
            index,
        )
        conn.execute("COMMIT")
    conn.execute(MARK_FROM_SCAN)  # every row loaded is indexed: the mark goes past them
    inserted = time.monotonic()
    for _, definition in indexes:
        conn.execute(definition)
    indexed = time.monotonic()
    conn.execute("ANALYZE")
    conn.close()
    end = time.monotonic()
    phases = (
        f"INSERT {inserted - start:.0f} s, the indexes {indexed - inserted:.0f} s,"
        f" ANALYZE {end - indexed:.0f} s"
    )
    return end - start, text_bytes, phases


def check_loaded(store: ConversationStore, layout: Layout) -> None:
    """The store reads a bulk-loaded conversation as one of its own (a kept store may have
    had appends since)."""
    c = layout.conversations - 1
    conv = store.get_conversation(conversation_id=layout.cid(c))
    page = store.get_messages(
        conversation_id=layout.cid(c), limit=1, after=layout.mid(c, PER_CONVERSATION - 1)
    )
    assert conv is not None and conv.message_count >= PER_CONVERSATION, conv
    assert page[0].message_id == layout.mid(c, PER_CONVERSATION), page
    found = store.search_messages(query=page[0].content.split()[0], conversation_id=layout.cid(c))
    assert found.items, "the search index holds the loaded messages"


# -- bytes on disk -------------------------------------------------------------------------------


def disk_postgresql(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT 'messages table', pg_table_size('convostore_messages')"
            " UNION ALL SELECT indexrelid::regclass::text, pg_relation_size(indexrelid)"
            " FROM pg_index WHERE indrelid = 'convostore_messages'::regclass"
            " UNION ALL SELECT 'conversations (table and indexes)',"
            " pg_total_relation_size('convostore_conversations')"
        ).fetchall()
    return {str(name): int(size) for name, size in rows}


def disk_sqlite(path: str) -> dict[str, int]:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    conn.close()
    out: dict[str, int] = {}
    for name, size in rows:
        if name.startswith("convostore_search"):
            key = "search index (FTS5 tables)"
        elif name.startswith("convostore_conversations") or name.startswith(
            "sqlite_autoindex_convostore_conversations"
        ):
            key = "conversations (table and indexes)"
        elif name == "sqlite_autoindex_convostore_messages_1":
            key = "messages primary key"
        elif name.startswith("convostore_messages"):
            key = "messages table" if name == "convostore_messages" else name
        else:
            continue
        out[key] = out.get(key, 0) + int(size)
    return out


# -- the calls ------------------------------------------------------------------------------------


class Side:
    """One store and the random choices its calls take."""

    def __init__(self, store: ConversationStore, layout: Layout, texts: Texts, seed: int) -> None:
        self.store, self.layout, self.texts = store, layout, texts
        self.rng = random.Random(seed)
        self.thread = 0
        self.run = uuid.uuid4().hex[:8]  # threads of a kept store's earlier runs stay apart
        self.graph: Any = None

    def conversation(self) -> int:
        return self.rng.randrange(self.layout.conversations)

    def append(self) -> None:
        c = self.conversation()
        content = json.loads(self.texts.user[self.rng.randrange(POOL)][0])
        self.store.append_message(
            conversation_id=self.layout.cid(c),
            role="user",
            content=content,
            user_id=self.layout.uid(c),
        )

    def newest(self) -> None:
        c = self.conversation()
        page = self.store.get_messages(conversation_id=self.layout.cid(c), limit=20, order="desc")
        assert len(page) == 20

    def middle(self) -> None:
        c = self.conversation()
        before = self.layout.mid(c, PER_CONVERSATION // 2)
        page = self.store.get_messages(conversation_id=self.layout.cid(c), limit=20, before=before)
        assert len(page) == 20

    def listing(self) -> None:
        user = f"user_{self.rng.randrange(self.layout.users):07d}"
        page = self.store.list_conversations(user_id=user, limit=20)
        assert len(page.items) == PER_USER

    def step(self) -> None:
        from langchain_core.messages import HumanMessage

        config: Any = {"configurable": {"thread_id": f"scale-{self.run}-{self.thread}"}}
        self.graph.invoke({"messages": [HumanMessage("What is my order's status?")]}, config)


def langgraph_graph(stack: ExitStack, store: ConversationStore) -> Any:
    """A one-node graph on ``ConvostoreSaver(store)``; None without convostore-langgraph."""
    try:
        from convostore_langgraph import ConvostoreSaver
        from langchain_core.messages import AIMessage
        from langgraph.graph import START, MessagesState, StateGraph
    except ImportError:
        return None
    saver = ConvostoreSaver(store)
    stack.callback(saver.close)

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"Your order {len(state['messages'])} ships tomorrow.")]}

    graph = StateGraph(MessagesState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    return graph.compile(checkpointer=saver)


def paired(small: Side, big: Side, call: str) -> tuple[float, float]:
    """µs a call on each side: the median over ROUNDS of the mean of CALLS calls."""
    times: dict[int, list[float]] = {id(small): [], id(big): []}
    for r in range(ROUNDS):
        for side in (small, big) if r % 2 else (big, small):
            side.thread += 1
            fn: Callable[[], None] = getattr(side, call)
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            times[id(side)].append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(times[id(small)]), statistics.median(times[id(big)])


CALLS_MEASURED = [
    ("append_message", "append"),
    ("get_messages(limit=20), the newest", "newest"),
    ("get_messages(limit=20), from the middle", "middle"),
    ("list_conversations(user_id=..., limit=20)", "listing"),
    ("LangGraph step (invoke, ConvostoreSaver)", "step"),
]


class Place:
    """Where a store of one run is: its URL, its SQLite path or PostgreSQL URL, and (for a
    store kept between runs) what its load took, recorded beside it."""

    def __init__(self, kind: str, url: str, where: str, kept: bool) -> None:
        self.kind, self.url, self.where, self.kept = kind, url, where, kept

    def recorded(self) -> tuple[float, int, str] | None:
        """The load a kept store had: (seconds, text bytes, phases); None where not loaded."""
        if not self.kept:
            return None
        if self.kind == "sqlite":
            note = Path(self.where + ".load.json")
            text = note.read_text() if note.exists() else None
        else:
            with psycopg.connect(self.where) as conn:
                text = conn.execute(
                    "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace"
                    " WHERE nspname = current_schema()"
                ).fetchone()[0]  # type: ignore[index]
        return None if text is None else tuple(json.loads(text))  # type: ignore[return-value]

    def record(self, load: tuple[float, int, str]) -> None:
        if not self.kept:
            return
        text = json.dumps(load)
        if self.kind == "sqlite":
            Path(self.where + ".load.json").write_text(text)
            return
        with psycopg.connect(self.where, autocommit=True) as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
            conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(sql.Identifier(schema), text))


@contextmanager
def database(kind: str, tmp: str, name: str, keep: int | None = None) -> Iterator[Place]:
    """A fresh database, dropped afterwards; with ``keep`` (a size), the one kept for that
    size (made by the first run that asks for it, never dropped: drop it by hand)."""
    if kind == "postgresql" and keep is not None:
        schema = f"convostore_scale_{keep}"
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        url = f"{PG}{'&' if '?' in PG else '?'}options={quote(f'-csearch_path={schema}')}"
        print(f"The {keep:,}-message store is kept in the schema {schema}.")
        yield Place(kind, url, url, kept=True)
    elif kind == "postgresql":
        with pg_schema() as url:
            yield Place(kind, url, url, kept=False)
    elif keep is not None:
        path = os.path.join(tempfile.gettempdir(), f"convostore-scale-{keep}.db")
        print(f"The {keep:,}-message store is kept in convostore-scale-{keep}.db (temp folder).")
        yield Place(kind, f"sqlite:///{path}", path, kept=True)
    else:
        path = os.path.join(tmp, f"{name}.db")
        try:
            yield Place(kind, f"sqlite:///{path}", path, kept=False)
        finally:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)


WAL_CALLS = 300
STATS_FLUSH_S = 11  # a backend reports its counters once idle, at most 10 s late (PostgreSQL 15)


class WalCounters:
    """What ``append_message`` writes to PostgreSQL's WAL and reads into its buffers, a call:
    the server's ``pg_stat_wal`` (every session's, so a busy server adds its own) and the
    store's schema's ``pg_statio_user_tables`` around ``WAL_CALLS`` appends, once the
    store's session has reported them."""

    NAMES = ("WAL bytes", "WAL records", "full-page images", "pages read into shared buffers")

    @staticmethod
    def snapshot(url: str) -> list[float]:
        with psycopg.connect(url) as conn:
            wal = conn.execute("SELECT wal_bytes, wal_records, wal_fpi FROM pg_stat_wal").fetchone()
            reads = conn.execute(
                "SELECT sum(coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0)"
                " + coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0))"
                " FROM pg_statio_user_tables WHERE schemaname = current_schema()"
            ).fetchone()
        return [float(v) for v in (*wal, *reads)]  # type: ignore[misc]

    @classmethod
    def per_append(cls, side: Side, url: str) -> list[float]:
        time.sleep(STATS_FLUSH_S)
        before = cls.snapshot(url)
        for _ in range(WAL_CALLS):
            side.append()
        time.sleep(STATS_FLUSH_S)
        after = cls.snapshot(url)
        return [(b - a) / WAL_CALLS for a, b in zip(before, after, strict=True)]


def run(kind: str, size: int, texts: Texts, tmp: str, keep: bool) -> None:
    load = load_postgresql if kind == "postgresql" else load_sqlite
    disk = disk_postgresql if kind == "postgresql" else disk_sqlite
    small_layout, big_layout = Layout(SMALL), Layout(size)
    with ExitStack() as stack:
        small = stack.enter_context(database(kind, tmp, "small"))
        big = stack.enter_context(database(kind, tmp, "big", size if keep else None))
        _, _, phases = load(small.where, small_layout, texts)
        print(f"Load of {SMALL:,} messages: {phases}.")
        loaded = big.recorded()
        if loaded is None:
            loaded = load(big.where, big_layout, texts)
            big.record(loaded)
            print(f"Load of {size:,} messages: {loaded[2]}.")
        else:
            print(f"Load of {size:,} messages (by an earlier run, kept since): {loaded[2]}.")
        seconds, text_bytes, _ = loaded
        sides = []
        for place, layout, seed in ((small, small_layout, 1), (big, big_layout, 2)):
            store = ConversationStore(place.url)
            stack.callback(store.close)
            check_loaded(store, layout)
            side = Side(store, layout, texts, seed)
            side.graph = langgraph_graph(stack, store)
            sides.append(side)
        on_disk = disk(big.where)
        print(
            f"\n### {kind}: {size:,} messages ({big_layout.conversations:,} conversations)"
            f" against {SMALL:,} ({small_layout.conversations:,})\n"
        )
        print(f"Loaded in {seconds / 60:.1f} minutes ({size / seconds:,.0f} messages/s).\n")
        print(f"| call | {SMALL:,} messages | {size:,} messages | ratio |")
        print("|---|---|---|---|")
        for label, call in CALLS_MEASURED:
            if call == "step" and sides[0].graph is None:
                print(f"| {label} | not run: convostore-langgraph is not installed | | |")
                continue
            small_us, big_us = paired(sides[0], sides[1], call)
            print(f"| {label} | {small_us:,.0f} µs | {big_us:,.0f} µs | {big_us / small_us:.2f} |")
        if kind == "postgresql":
            counted = [
                WalCounters.per_append(s, p.url) for s, p in zip(sides, (small, big), strict=True)
            ]
            print(
                f"\n`append_message`, a call, over {WAL_CALLS} more calls on each store (the"
                " server's WAL counters, every session's; the pages the store's tables and"
                " indexes read from outside shared buffers):\n"
            )
            print(f"| | {SMALL:,} messages | {size:,} messages |")
            print("|---|---|---|")
            for i, name in enumerate(WalCounters.NAMES):
                print(f"| {name} | {counted[0][i]:,.1f} | {counted[1][i]:,.1f} |")
        total = sum(on_disk.values())
        print(
            f"\nOn disk after the run ({size:,} messages, {text_bytes / size:,.0f} bytes of text"
            " each on average):\n"
        )
        print("| part | bytes | bytes a message | per byte of text |")
        print("|---|---|---|---|")
        for name, value in sorted(on_disk.items(), key=lambda kv: -kv[1]):
            print(f"| {name} | {value:,} | {value / size:,.0f} | {value / text_bytes:.2f} |")
        print(f"| **all** | {total:,} | {total / size:,.0f} | {total / text_bytes:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=sizes, default=sizes("10m"), help="messages (10m, 100k)")
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the large store (a schema, a file in the temp folder) and use it again in"
        " a later run with --keep, without loading it again",
    )
    args = parser.parse_args()
    texts = Texts()
    print(
        f"Calls: the median of {ROUNDS} rounds of {CALLS} calls on each store, alternating;"
        " each call on a conversation (or user) drawn at random."
    )
    with tempfile.TemporaryDirectory(prefix="convostore-scale-") as tmp:
        for kind in args.backends.split(","):
            run(kind, args.size, texts, tmp, args.keep)


if __name__ == "__main__":
    with markdown_report("The store at 10,000,000 messages", ["convostore", "psycopg"]):
        main()
