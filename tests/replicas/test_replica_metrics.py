"""A replica's lag (bytes of WAL still to replay, as the watcher last saw it) and its pool,
read with the real OpenTelemetry SDK's ``InMemoryMetricReader`` while a real standby's
replay is paused and resumed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from convostore import ConversationStore
from convostore.backends.replicas import ReplicatedBackend
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from otel_sdk import reading_metrics
from pg_cluster import Pair


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    with reading_metrics() as reader:
        yield reader


def values(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], float]]:
    data = reader.get_metrics_data()
    return [
        (dict(point.attributes), point.value)
        for resource in (data.resource_metrics if data else [])
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


def lag(reader: InMemoryMetricReader, replica: str) -> float | None:
    found = [
        v
        for a, v in values(reader, "convostore.replica.lag")
        if a == {"convostore.replica": replica}
    ]
    return found[0] if found else None


def until(condition: Any) -> None:
    """Wait for the watcher's next looks (pytest's timeout bounds it)."""
    while not condition():
        threading.Event().wait(0.05)


def test_a_paused_standby_lags_and_catches_up(
    pair: Pair, urls: tuple[str, str], reader: InMemoryMetricReader
) -> None:
    primary, standby = urls
    with ConversationStore(primary, replicas=[standby], max_replica_lag=0.5) as store:
        backend = store.backend
        assert isinstance(backend, ReplicatedBackend)
        [replica] = backend.replicas
        until(lambda: lag(reader, replica.name) == 0)  # caught up
        pools = {
            a["db.client.connection.pool.name"]
            for a, _ in values(reader, "db.client.connection.max")
        }
        assert replica.pool.name in pools  # the replica's pool beside the primary's
        pair.pause_replay()
        try:
            for i in range(20):
                store.append_message(conversation_id="c", role="user", content="x" * 1000 + str(i))
            until(lambda: (lag(reader, replica.name) or 0) > 20_000)
        finally:
            pair.resume_replay()
        until(lambda: lag(reader, replica.name) == 0)
