"""OpenTelemetry metrics of the store's public calls, read with the real SDK's in-memory reader."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError, telemetry
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

DIALECT = {"memory": "sqlite", "sqlite": "sqlite", "postgres": "postgresql"}


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    telemetry.configure(meter_provider=provider)
    yield reader
    telemetry.configure()
    provider.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    """Each data point of the metric ``name``, by its sorted attributes."""
    found: dict[tuple[tuple[str, Any], ...], Any] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[tuple(sorted(point.attributes.items()))] = point
    return found


def key(method: str, system: str, **more: str) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted({"convostore.method": method, "db.system.name": system, **more}.items()))


def test_calls_and_durations_by_method_and_database(
    backend_url: str, reader: InMemoryMetricReader, request: pytest.FixtureRequest
) -> None:
    system = DIALECT[request.node.callspec.params["backend_url"]]
    with ConversationStore(backend_url) as store:
        for i in range(3):
            store.append_message(conversation_id="c", role="user", content=str(i))
        store.get_history(conversation_id="c")
        store.get_history(conversation_id="c")
        with pytest.raises(MemoryValidationError):
            store.get_messages(conversation_id="c", limit=0)
    calls = points(reader, "convostore.call.duration")
    assert calls[key("append_message", system)].count == 3
    assert key("append_messages", system) not in calls  # append_message's own work
    assert calls[key("get_history", system)].count == 2
    assert calls[key("get_history", system)].sum > 0
    failed = key("get_messages", system, **{"error.type": "MemoryValidationError"})
    assert calls[failed].count == 1
    assert len(calls) == 3


@pytest.mark.anyio
async def test_the_async_store_counts_the_same_calls(reader: InMemoryMetricReader) -> None:
    async with AsyncConversationStore("memory://") as store:
        await store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "x"}] * 2
        )
        await store.get_messages(conversation_id="c")
    calls = points(reader, "convostore.call.duration")
    assert calls[key("append_messages", "sqlite")].count == 1
    assert calls[key("get_messages", "sqlite")].count == 1


def test_every_operation_is_a_public_method_the_async_store_has_too() -> None:
    for name in telemetry.OPERATIONS:
        assert getattr(ConversationStore, name).__wrapped__.__name__ == name
        assert hasattr(AsyncConversationStore, name) or name == "start_sync_messages"


GLOBAL_PROVIDER = """
from convostore import ConversationStore
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

store = ConversationStore("memory://")
store.append_message(conversation_id="c", role="user", content="before")  # no provider yet
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
store.append_message(conversation_id="c", role="user", content="after")
data = reader.get_metrics_data()
[calls] = [m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics
           if m.name == "convostore.call.duration"]
print([(dict(p.attributes), p.count) for p in calls.data.data_points])
"""


def test_a_global_provider_set_after_the_import_is_used_from_then_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", GLOBAL_PROVIDER], capture_output=True, text=True, check=True
    )
    expected = {"convostore.method": "append_message", "db.system.name": "sqlite"}
    assert done.stdout.strip() == str([(expected, 1)])
