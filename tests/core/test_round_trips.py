"""Network round trips per call on PostgreSQL, counted from libpq's protocol trace (each Sync
the client sends waits for the server once). A write sends the statements whose rows it does
not read along with the next one (pipeline mode), so fewer round trips are not a timing claim
but a count."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from convostore import (
    ConflictError,
    ConversationManagedError,
    ConversationOwnershipError,
    ConversationStore,
    MemoryQuotaExceededError,
    telemetry,
)
from convostore.backends import ConversationRow
from convostore.spi import StartedSync, Tx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from psycopg import pq
from psycopg_pool import ConnectionPool


class Traced:
    """A store on one traced PostgreSQL connection; ``round_trips(call)`` counts a call's."""

    def __init__(self, url: str) -> None:
        self.trace = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by close()

        def configure(conn: Any) -> None:
            conn.pgconn.trace(self.trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

        self.pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=1,
            configure=configure,
            kwargs={"prepare_threshold": None},
            open=True,
        )
        self.store = ConversationStore(pool=self.pool)

    def round_trips(self, call: Callable[[ConversationStore], object]) -> int:
        self.trace.flush()
        start = os.lseek(self.trace.fileno(), 0, os.SEEK_END)
        call(self.store)
        self.trace.flush()
        self.trace.seek(start)
        return sum(1 for line in self.trace.read().splitlines() if line.startswith("F\t4\tSync"))

    def requests(self, call: Callable[[ConversationStore], object]) -> int:
        """The messages ``call`` waited for the server on: each Sync of the extended protocol
        and each Query of the simple one (psycopg's BEGIN, COMMIT and statements without
        parameters in a read's transaction)."""
        self.trace.flush()
        start = os.lseek(self.trace.fileno(), 0, os.SEEK_END)
        call(self.store)
        self.trace.flush()
        self.trace.seek(start)
        lines = self.trace.read().splitlines()
        return sum(1 for line in lines if line.split("\t")[:3:2] in (["F", "Sync"], ["F", "Query"]))

    def close(self) -> None:
        self.store.close()
        self.pool.close()
        self.trace.close()


@pytest.fixture
def traced(pg_schema_url: str) -> Iterator[Traced]:
    t = Traced(pg_schema_url)
    t.store.append_message(conversation_id="c", role="user", content="first")
    yield t
    t.close()


def test_an_append_after_this_stores_own_takes_one_round_trip(traced: Traced) -> None:
    """One statement outside a transaction: the conversation's row updated where it is still
    as this store wrote it, the messages inserted if it was."""
    append = lambda s: s.append_message(conversation_id="c", role="user", content="x")  # noqa: E731
    assert traced.round_trips(append) == 1
    batch = [{"role": "user", "content": str(i)} for i in range(10)]
    assert traced.round_trips(lambda s: s.append_messages(conversation_id="c", messages=batch)) == 1
    contents = traced.store.get_contents(conversation_id="c")
    assert contents == ["first", "x", *(str(i) for i in range(10))]


def test_an_append_after_another_writers_append_is_still_one_round_trip(
    traced: Traced, pg_schema_url: str
) -> None:
    """What the rules read (owner, metadata, room under the quota) is as this store wrote it:
    the statement numbers the messages after the other writer's."""
    with ConversationStore(pg_schema_url) as other:
        other.append_message(conversation_id="c", role="user", content="theirs")
        append = lambda s: s.append_message(conversation_id="c", role="user", content="x")  # noqa: E731
        assert traced.round_trips(append) == 1
        other.append_messages(conversation_id="c", messages=[{"role": "user", "content": "t2"}] * 2)
        assert traced.round_trips(append) == 1
    history = traced.store.get_history(conversation_id="c")
    assert [m.content for m in history] == ["first", "theirs", "x", "t2", "t2", "x"]
    meta = traced.store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 6


def test_threads_appending_to_one_conversation_each_take_one_round_trip(traced: Traced) -> None:
    """Appends racing through one store each read the row as another one left it: counted on
    the row as it is, none of them falls back to the locking path, and nothing is lost."""
    import threading

    def writer(n: int) -> None:
        for i in range(25):
            traced.store.append_message(conversation_id="c", role="user", content=[n, i])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]

    def run(_: ConversationStore) -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert traced.round_trips(run) == 100
    history = traced.store.get_history(conversation_id="c")
    assert len(history) == 101
    for n in range(4):
        assert [m.content[1] for m in history[1:] if m.content[0] == n] == list(range(25))
    meta = traced.store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 101


def test_the_quota_is_judged_on_the_count_as_it_is(pg_schema_url: str) -> None:
    """Another writer filled the conversation since this store counted it: the statement
    writes nothing and the locking path refuses, from the row as it is."""
    with (
        ConversationStore(pg_schema_url) as other,
        ConversationStore(pg_schema_url).with_limits(max_messages_per_conversation=5) as ours,
    ):
        ours.append_messages(conversation_id="q", messages=[{"role": "user", "content": "o"}] * 3)
        other.append_messages(conversation_id="q", messages=[{"role": "user", "content": "t"}] * 2)
        with pytest.raises(MemoryQuotaExceededError):
            ours.append_message(conversation_id="q", role="user", content="x")
        assert ours.get_contents(conversation_id="q") == ["o", "o", "o", "t", "t"]


def test_an_append_after_another_writer_changed_the_metadata_takes_the_locking_path(
    traced: Traced, pg_schema_url: str
) -> None:
    """The metadata the rules read changed since this store wrote the row: the conditional
    statement writes nothing (one round trip), then BEGIN with the locking read, and the
    writes with COMMIT."""
    with ConversationStore(pg_schema_url) as other:
        other.update_conversation(conversation_id="c", metadata={"k": 1})
    append = lambda s: s.append_message(conversation_id="c", role="user", content="x")  # noqa: E731
    assert traced.round_trips(append) == 3
    assert traced.round_trips(append) == 1  # its own write again
    assert traced.store.get_contents(conversation_id="c") == ["first", "x", "x"]
    first = lambda s: s.append_message(conversation_id="new", role="user", content="x")  # noqa: E731
    # a new conversation: the locking read finds none, its row is inserted, the writes
    assert traced.round_trips(first) == 3
    with_id = lambda s: s.append_message(  # noqa: E731
        conversation_id="c", role="user", content="x", message_id="msg_mine"
    )
    # a supplied id: the one statement too, which also finds the id free
    assert traced.round_trips(with_id) == 1
    # a retry: the statement finds the id taken and writes nothing, then the locking read
    # with the lookup of the id (sent together) finds it equal: nothing written
    assert traced.round_trips(with_id) == 3
    assert traced.round_trips(with_id) == 2  # not remembered now: the locking read alone
    assert traced.store.get_contents(conversation_id="c") == ["first", "x", "x", "x"]


def test_a_fold_that_changes_nothing_keeps_the_one_statement(traced: Traced) -> None:
    """``fold`` runs on the row as this store wrote it (the statement then checks it is
    still that row); a patch takes the locking path, where it is merged in the transaction."""
    seen: list[object] = []

    def mark(metadata: dict[str, object] | None, added: object) -> dict[str, object] | None:
        seen.append(metadata)
        return None if (metadata or {}).get("marked") else {"marked": True}

    def append(s: ConversationStore) -> object:
        return s.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "x"}], fold=mark
        )

    assert traced.round_trips(append) == 2  # a patch: the locking path, nothing sent first
    assert traced.round_trips(append) == 1
    conversation = traced.store.get_conversation(conversation_id="c")
    assert conversation is not None and conversation.metadata == {"marked": True}
    assert conversation.message_count == 3
    assert seen == [None, None, {"marked": True}]


def test_a_conversation_with_big_metadata_takes_the_locking_path(traced: Traced) -> None:
    """Rows are remembered with at most 8 KiB of metadata (the memory bound of what a store
    remembers, and the statement would send it back)."""
    store = traced.store
    store.update_conversation(conversation_id="c", metadata={"notes": "n" * 10_000})
    append = lambda s: s.append_message(conversation_id="c", role="user", content="x")  # noqa: E731
    assert traced.round_trips(append) == 3  # the row remembered before the update: stale
    assert traced.round_trips(append) == 2  # not remembered: its metadata is too big
    assert traced.round_trips(append) == 2
    store.update_conversation(conversation_id="c", metadata={"notes": None})
    assert traced.round_trips(append) == 2  # the locking path remembers the row again
    assert traced.round_trips(append) == 1


def test_the_conditional_append_compares_every_column(pg_schema_url: str) -> None:
    """What the sync's statement compares is the whole row (the append's, what its rules
    read): a column added to the table and not to ConversationRow would let a change to it go
    unseen."""
    with ConversationStore(pg_schema_url) as store:
        columns = store.backend.read(
            lambda tx: tx.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = 'convostore_conversations'"
                " AND table_schema = current_schema() ORDER BY ordinal_position"
            )
        )
    assert [c for (c,) in columns] == list(ConversationRow._fields)


def test_a_row_changed_elsewhere_is_judged_as_it_is_now(pg_schema_url: str) -> None:
    """The rules run on the row as this store last wrote it only to try the one statement;
    another writer's owner, manager or messages are seen, and refused or counted, as they
    are in the database."""
    with (
        ConversationStore(pg_schema_url) as ours,
        ConversationStore(pg_schema_url) as theirs,
    ):
        ours.append_message(conversation_id="c", role="user", content="one")
        theirs.append_message(conversation_id="c", role="user", content="two", user_id="bob")
        with pytest.raises(ConversationOwnershipError):
            ours.append_message(conversation_id="c", role="user", content="x", user_id="alice")
        small = ours.with_limits(max_messages_per_conversation=3)
        small.append_message(conversation_id="c", role="user", content="three")
        theirs.append_message(conversation_id="c", role="user", content="four")
        with pytest.raises(MemoryQuotaExceededError):
            small.append_message(conversation_id="c", role="user", content="five")
        ours.append_message(conversation_id="m", role="user", content="one")
        theirs.delete_conversation(conversation_id="m")
        theirs.as_component("convostore-langgraph").sync_messages(
            conversation_id="m",
            messages=[{"role": "user", "content": "one", "message_id": "msg_one"}],
        )
        with pytest.raises(ConversationManagedError):
            ours.append_message(conversation_id="m", role="user", content="x")
        assert ours.get_contents(conversation_id="c") == ["one", "two", "three", "four"]


def test_single_statement_reads_take_one_round_trip(traced: Traced) -> None:
    assert traced.round_trips(lambda s: s.get_messages(conversation_id="c")) == 1
    assert traced.round_trips(lambda s: s.get_conversation(conversation_id="c")) == 1


def test_a_users_first_page_is_one_statement_with_its_owner_check(traced: Traced) -> None:
    """A user's page without a cursor: the owner checked on the row the page comes with, one
    request (a page after a cursor also reads the cursor's position, in one snapshot)."""
    store = traced.store
    store.append_message(conversation_id="mine", role="user", content="one", user_id="u")
    for order in ("asc", "desc"):
        page = lambda s, order=order: s.get_messages(  # noqa: E731
            conversation_id="mine", user_id="u", order=order
        )
        assert traced.requests(page) == 1
        assert [m.content for m in page(store)] == ["one"]
    missing = lambda s: s.get_messages(conversation_id="nobody's", user_id="u")  # noqa: E731
    assert traced.requests(missing) == 1 and missing(store) == []
    with pytest.raises(ConversationOwnershipError):
        store.get_messages(conversation_id="mine", user_id="someone else")


def test_a_memory_write_after_this_stores_own_write_takes_one_round_trip(
    traced: Traced, pg_schema_url: str
) -> None:
    """One statement for a create or an update when this store wrote the memory store (and
    the entry) last; otherwise the locked store row with the entry, then the version, entry
    and store writes with COMMIT (a move looks its new path up in between)."""
    store = traced.store
    sid = store.create_memory_store("s").memory_store_id
    entry = store.create_memory(sid, "a.md", "one")
    assert traced.round_trips(lambda s: s.update_memory(sid, entry.entry_id, "two", 1)) == 1
    assert traced.round_trips(lambda s: s.update_memory(sid, entry.entry_id, "three", 2)) == 1
    move = lambda s: s.update_memory(sid, entry.entry_id, None, 3, path="b.md")  # noqa: E731
    assert traced.round_trips(move) == 3
    create = lambda s: s.create_memory(sid, "c.md", "new")  # noqa: E731
    assert traced.round_trips(create) == 1
    assert traced.round_trips(lambda s: s.get_memory(sid, entry.entry_id)) == 1
    with ConversationStore(pg_schema_url) as theirs:
        theirs.create_memory(sid, "d.md", "theirs")
    # the store's row moved: the one statement finds it, then the locking path
    assert traced.round_trips(lambda s: s.update_memory(sid, entry.entry_id, "five", 4)) == 3
    assert traced.round_trips(lambda s: s.update_memory(sid, entry.entry_id, "six", 5)) == 1
    with ConversationStore(pg_schema_url) as theirs:
        other = theirs.create_memory_store("other").memory_store_id
    assert traced.round_trips(lambda s: s.create_memory(other, "a.md", "first")) == 2
    assert traced.round_trips(lambda s: s.create_memory(other, "b.md", "next")) == 1


def test_a_sync_in_an_adapters_transaction_waits_only_for_its_commit(
    traced: Traced, pg_schema_url: str
) -> None:
    """``start_sync_messages`` appending to a conversation this store wrote last sends one
    conditional statement with the adapter's, read after the COMMIT: the transaction's one
    round trip. Where the conversation is not as remembered, the statement writes nothing
    (``confirm()`` says so) and the next sync takes the locking read."""
    component = traced.store.as_component("test-own")
    component.backend.write(lambda tx: tx.execute("CREATE TABLE test_own (k TEXT)"))
    started: list[StartedSync] = []

    def sync(mid: str, after: str, kept: int) -> Callable[[ConversationStore], object]:
        def write(tx: Tx) -> None:
            started[:] = [
                component.start_sync_messages(
                    tx=tx,
                    conversation_id="s",
                    messages=[{"role": "user", "content": mid, "message_id": mid}],
                    after=after,
                    kept=kept,
                )
            ]
            tx.send("INSERT INTO test_own VALUES (?)", [mid])
            started[0].finish()

        return lambda s: s.backend.write(write)

    component.sync_messages(
        conversation_id="s", messages=[{"role": "user", "content": "a", "message_id": "a"}]
    )
    assert traced.round_trips(sync("b", "a", 1)) == 1
    started[0].confirm()
    assert traced.round_trips(sync("c", "b", 2)) == 1
    started[0].confirm()
    with ConversationStore(pg_schema_url) as other:
        other.as_component("test-own").sync_messages(
            conversation_id="s",
            messages=[{"role": "user", "content": "x", "message_id": "x"}],
            after="c",
        )
    assert traced.round_trips(sync("d", "c", 3)) == 1
    with pytest.raises(ConflictError, match="changed since this store wrote it"):
        started[0].confirm()
    assert traced.store.get_contents(conversation_id="s") == ["a", "b", "c", "x"]
    # not remembered now: the locking read, then the writes with the COMMIT
    assert traced.round_trips(sync("d", "x", 4)) == 2
    started[0].confirm()
    assert traced.round_trips(sync("e", "d", 5)) == 1
    started[0].confirm()
    assert traced.store.get_contents(conversation_id="s") == ["a", "b", "c", "x", "d", "e"]
    rows = traced.store.backend.read(lambda tx: tx.execute("SELECT k FROM test_own"))
    assert [k for (k,) in rows] == ["b", "c", "d", "d", "e"]


def test_a_traced_call_says_its_round_trips(traced: Traced, pg_schema_url: str) -> None:
    """``convostore.round_trips`` on a call's span is what libpq's trace counts, on every
    path: the one statement, the locking path, single-statement reads, reads in a
    transaction, copies and erasures; ``convostore.retries`` is 0 where nothing was retried."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    store = traced.store
    sid = store.create_memory_store("s").memory_store_id
    calls: list[Callable[[ConversationStore], object]] = [
        lambda s: s.append_message(conversation_id="c", role="user", content="x"),
        lambda s: s.append_message(conversation_id="new", role="user", content="x"),
        lambda s: s.append_messages(
            conversation_id="big", messages=[{"role": "user", "content": "q"}] * 150
        ),
        lambda s: s.get_messages(conversation_id="c"),
        lambda s: s.get_history(conversation_id="big"),
        lambda s: s.search_messages(query="x"),
        lambda s: s.find_conversations(id_prefix="c"),
        lambda s: s.find_conversation_briefs(id_prefix="c"),
        lambda s: s.update_conversation(conversation_id="c", metadata={"a": 1}),
        lambda s: s.fork_conversation(conversation_id="c", new_conversation_id="d"),
        lambda s: s.pop_message(conversation_id="d"),
        lambda s: s.delete_conversation(conversation_id="d"),
        lambda s: s.create_memory(sid, "a.md", "one"),
        lambda s: s.sync_messages(
            conversation_id="e", messages=[{"role": "user", "content": "q", "message_id": "m"}]
        ),
        lambda s: s.delete_user_data(user_id="u"),
    ]
    try:
        for call in calls:
            exporter.clear()
            expected = traced.requests(call)
            [span] = exporter.get_finished_spans()
            attributes = dict(span.attributes or {})
            assert attributes["convostore.round_trips"] == expected, span.name
            assert attributes["convostore.retries"] == 0
    finally:
        telemetry.configure(tracer_provider=None)
        provider.shutdown()
