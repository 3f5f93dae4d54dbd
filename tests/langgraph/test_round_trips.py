"""Round trips of a graph's turn on PostgreSQL, counted from libpq's protocol trace (each
Sync of the extended protocol and each simple Query waits for the server once): a count, not
a timing claim."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver
from lg_graphs import three_node_graph, user
from psycopg import pq
from psycopg_pool import ConnectionPool


@pytest.fixture
def traced(pg_schema_url: str) -> Iterator[tuple[ConvostoreSaver, Any]]:
    trace = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed below

    def configure(conn: Any) -> None:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    pool: ConnectionPool[Any] = ConnectionPool(
        pg_schema_url,
        min_size=1,
        max_size=1,
        configure=configure,
        kwargs={"prepare_threshold": None},  # preparing a statement is a round trip of its own
        open=True,
    )
    store = ConversationStore(pool=pool)
    yield ConvostoreSaver(store), trace
    store.close()
    pool.close()
    trace.close()


def test_a_turn_is_one_round_trip_per_saver_call(traced: tuple[ConvostoreSaver, Any]) -> None:
    """Once the thread's lists are in memory: the latest checkpoint is one statement; each
    checkpoint's transaction (its conversation, delta and row) is sent and committed in one
    round trip, a missing delta base failing it rather than being asked for; each batch of
    pending writes is one statement. The three-node graph's turn makes 1 + 5 + 4 calls."""
    saver, trace = traced
    graph = three_node_graph().compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("hello", 0), config)
    calls: list[str] = []
    for name in ("get_tuple", "put", "put_writes"):
        method = getattr(saver, name)
        setattr(saver, name, lambda *a, _m=method, _n=name, **k: calls.append(_n) or _m(*a, **k))
    trace.flush()
    start = os.lseek(trace.fileno(), 0, os.SEEK_END)
    graph.invoke(user("again", 1), config)
    trace.flush()
    trace.seek(start)
    lines = trace.read().splitlines()
    waits = sum(1 for line in lines if line.split("\t")[:3:2] in (["F", "Sync"], ["F", "Query"]))
    assert sorted(calls) == ["get_tuple"] + ["put"] * 5 + ["put_writes"] * 4
    assert waits == len(calls)
