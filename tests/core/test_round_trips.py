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
from convostore import ConversationStore
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


def test_an_append_to_a_conversation_takes_two_round_trips(traced: Traced) -> None:
    """BEGIN with the locking read of the conversation; the insert, the update and COMMIT."""
    append = lambda s: s.append_message(conversation_id="c", role="user", content="x")  # noqa: E731
    assert traced.round_trips(append) == 2
    batch = [{"role": "user", "content": str(i)} for i in range(10)]
    assert traced.round_trips(lambda s: s.append_messages(conversation_id="c", messages=batch)) == 2


def test_single_statement_reads_take_one_round_trip(traced: Traced) -> None:
    assert traced.round_trips(lambda s: s.get_messages(conversation_id="c")) == 1
    assert traced.round_trips(lambda s: s.get_conversation(conversation_id="c")) == 1


def test_a_memory_write_takes_two_round_trips(traced: Traced) -> None:
    """The locked store row with the entry; the version, entry and store writes with COMMIT."""
    store = traced.store
    sid = store.create_memory_store("s").memory_store_id
    entry = store.create_memory(sid, "a.md", "one")
    update = lambda s: s.update_memory(sid, entry.entry_id, "two", 1)  # noqa: E731
    assert traced.round_trips(update) == 2
    create = lambda s: s.create_memory(sid, "b.md", "new")  # noqa: E731
    assert traced.round_trips(create) == 2
    assert traced.round_trips(lambda s: s.get_memory(sid, entry.entry_id)) == 1
