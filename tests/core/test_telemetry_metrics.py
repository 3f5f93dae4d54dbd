"""The store's metrics beside its call durations, read with the real OpenTelemetry SDK's
``InMemoryMetricReader``: a PostgreSQL pool's connections (OpenTelemetry's database client
conventions), the SQLite writers' queue wait, the one-statement append's outcomes."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from convostore import ConflictError, ConversationStore
from convostore.spi import StartedSync, Tx
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from otel_sdk import points, reading_metrics
from psycopg_pool import ConnectionPool


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    with reading_metrics() as reader:
        yield reader


def pool_values(reader: InMemoryMetricReader, pool: str) -> dict[str, float]:
    """The pool's connections by state, its bound and its waiting calls."""
    values: dict[str, float] = {}
    for name in (
        "db.client.connection.count",
        "db.client.connection.max",
        "db.client.connection.pending_requests",
    ):
        for attributes, point in points(reader, name).items():
            given = dict(attributes)
            if given.get("db.client.connection.pool.name") == pool:
                state = given.get("db.client.connection.state")
                values[f"{name}.{state}" if state else name] = point.value
    return values


def test_a_pools_connections_in_use_idle_and_waited_for(
    reader: InMemoryMetricReader, pg_schema_url: str
) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(pg_schema_url, min_size=1, max_size=1, open=True)
    try:
        with ConversationStore(pool=pool) as store:
            store.append_message(conversation_id="c", role="user", content="x")
            assert pool_values(reader, pool.name) == {
                "db.client.connection.count.used": 0,
                "db.client.connection.count.idle": 1,
                "db.client.connection.max": 1,
                "db.client.connection.pending_requests": 0,
            }
            with pool.connection():  # the pool's one connection, taken
                done = threading.Event()
                waiting = threading.Thread(
                    target=lambda: (store.get_messages(conversation_id="c"), done.set())
                )
                waiting.start()
                while pool_values(reader, pool.name)["db.client.connection.pending_requests"] < 1:
                    assert not done.is_set()
                    threading.Event().wait(0.01)
                values = pool_values(reader, pool.name)
                assert values["db.client.connection.count.used"] == 1
                assert values["db.client.connection.count.idle"] == 0
            waiting.join()
            assert done.is_set()
            assert pool_values(reader, pool.name)["db.client.connection.pending_requests"] == 0
        # a closed store reports its pool no more (a pool it opened itself)
        with ConversationStore(pg_schema_url) as own:
            name = own.backend.pool.name  # type: ignore[attr-defined]
            assert pool_values(reader, name)["db.client.connection.max"] == 10
        assert pool_values(reader, name) == {}
    finally:
        pool.close()


def test_the_sqlite_writers_queue_wait(reader: InMemoryMetricReader, tmp_path: Path) -> None:
    """Every write waits its turn (recorded); one that another writer holds up waits longer."""
    path = tmp_path / "queue.db"
    with ConversationStore(f"sqlite:///{path}") as store:
        for i in range(3):
            store.append_message(conversation_id="c", role="user", content=str(i))
        [first] = points(reader, "convostore.sqlite.queue.wait").values()
        assert first.count >= 3  # the appends (and the migrations' writes)
        quick = first.max
        # another writer of the file holds the queue (as a process's write does)
        queue = os.open(f"{path}-writers", os.O_RDWR)
        fcntl.flock(queue, fcntl.LOCK_EX)
        appended = threading.Thread(
            target=store.append_message,
            kwargs={"conversation_id": "c", "role": "user", "content": "held"},
        )
        appended.start()
        appended.join(0.2)
        assert appended.is_alive()  # waiting for its turn
        fcntl.flock(queue, fcntl.LOCK_UN)
        os.close(queue)
        appended.join()
        [after] = points(reader, "convostore.sqlite.queue.wait").values()
        assert after.count == first.count + 1
        assert after.max > quick
        assert store.get_contents(conversation_id="c")[-1] == "held"


def test_the_one_statement_appends_hits_misses_and_skips(
    reader: InMemoryMetricReader, pg_schema_url: str
) -> None:
    def outcomes() -> dict[str, int]:
        found = points(reader, "convostore.append.one_statement")
        return {
            dict(k)["convostore.outcome"]: p.value
            for k, p in found.items()
            if dict(k)["convostore.path"] == "append"
        }

    with ConversationStore(pg_schema_url) as ours, ConversationStore(pg_schema_url) as theirs:
        ours.append_message(conversation_id="c", role="user", content="1")  # not remembered
        ours.append_message(conversation_id="c", role="user", content="2")  # hit
        ours.append_message(conversation_id="c", role="user", content="3")  # hit
        theirs.append_message(conversation_id="c", role="user", content="x")  # theirs: skipped
        ours.append_message(conversation_id="c", role="user", content="4")  # hit: after "x"
        theirs.update_conversation(conversation_id="c", metadata={"k": 1})  # what rules read
        ours.append_message(conversation_id="c", role="user", content="5")  # miss
        ours.append_message(conversation_id="c", role="user", content="6")  # hit again
        assert outcomes() == {"skipped": 2, "hit": 4, "miss": 1}
        assert ours.get_contents(conversation_id="c") == ["1", "2", "3", "x", "4", "5", "6"]


def test_sqlite_has_no_one_statement_path(reader: InMemoryMetricReader) -> None:
    with ConversationStore("memory://") as store:
        store.append_message(conversation_id="c", role="user", content="1")
        store.append_message(conversation_id="c", role="user", content="2")
    assert points(reader, "convostore.append.one_statement") == {}


def test_a_sync_in_an_adapters_transaction_counts_its_hits_and_misses(
    reader: InMemoryMetricReader, pg_schema_url: str
) -> None:
    """``start_sync_messages`` appending after this store's own write sends the one statement
    (counted at ``confirm``: a hit, or a miss where another writer came between)."""

    def outcomes() -> dict[str, int]:
        found = points(reader, "convostore.append.one_statement")
        return {
            dict(k)["convostore.outcome"]: p.value
            for k, p in found.items()
            if dict(k)["convostore.path"] == "sync"
        }

    with ConversationStore(pg_schema_url) as store, ConversationStore(pg_schema_url) as other:
        component = store.as_component("test-own")

        def sync(mid: str, after: str) -> StartedSync:
            def write(tx: Tx) -> StartedSync:
                started = component.start_sync_messages(
                    tx=tx,
                    conversation_id="s",
                    messages=[{"role": "user", "content": mid, "message_id": mid}],
                    after=after,
                )
                started.finish()
                return started

            return component.backend.write(write)

        component.sync_messages(
            conversation_id="s", messages=[{"role": "user", "content": "a", "message_id": "a"}]
        )
        sync("b", "a").confirm()
        assert outcomes() == {"hit": 1}
        other.as_component("test-own").sync_messages(
            conversation_id="s",
            messages=[{"role": "user", "content": "x", "message_id": "x"}],
            after="b",
        )
        with pytest.raises(ConflictError):
            sync("c", "b").confirm()
        assert outcomes() == {"hit": 1, "miss": 1}
