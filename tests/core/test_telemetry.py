"""OpenTelemetry metrics and spans of the store's public calls, read with the real SDK's in-memory
reader and exporter."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    MemoryValidationError,
    StorageError,
    telemetry,
)
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import points, reading_metrics, recording_spans

DIALECT = {"memory": "sqlite", "sqlite": "sqlite", "postgres": "postgresql"}


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    with reading_metrics() as reader:
        yield reader


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


# -- traces ------------------------------------------------------------------------------------


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with recording_spans() as exporter:
        yield exporter


def test_each_call_is_a_span_under_the_callers(
    backend_url: str, exporter: InMemorySpanExporter, request: pytest.FixtureRequest
) -> None:
    system = DIALECT[request.node.callspec.params["backend_url"]]
    tracer = trace.get_tracer("test", tracer_provider=telemetry._settings.tracer_provider)
    with ConversationStore(backend_url) as store, tracer.start_as_current_span("agent.turn"):
        store.append_messages(
            conversation_id="secret-cid", messages=[{"role": "user", "content": "a"}] * 2
        )
        store.append_message(conversation_id="secret-cid", role="user", content="b")
        store.get_history(conversation_id="secret-cid")
        with pytest.raises(MemoryValidationError):
            store.get_messages(conversation_id="secret-cid", limit=0)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {
        "agent.turn",
        "convostore.append_messages",
        "convostore.append_message",  # its append_messages is its own work: no span
        "convostore.get_history",
        "convostore.get_messages",
    }
    turn = spans["agent.turn"].context
    for name, rows in [
        ("convostore.append_messages", 2),
        ("convostore.append_message", 1),
        ("convostore.get_history", 3),
    ]:
        span = spans[name]
        assert span.parent is not None and span.parent.span_id == turn.span_id
        assert span.context.trace_id == turn.trace_id
        assert span.kind == trace.SpanKind.CLIENT
        attributes = dict(span.attributes or {})
        trips = attributes.pop("convostore.round_trips", None)
        assert (trips is None) == (system == "sqlite")  # an embedded database has none
        assert attributes == {
            "db.system.name": system,
            "db.operation.name": name.removeprefix("convostore."),
            "convostore.rows": rows,
            "convostore.retries": 0,
        }
    failed = spans["convostore.get_messages"]
    assert failed.status.status_code == trace.StatusCode.ERROR
    assert failed.events[0].name == "exception"
    assert failed.events[0].attributes["exception.type"].endswith("MemoryValidationError")
    assert not any("secret-cid" in str(s.to_json()) for s in spans.values())  # omitted


def test_a_busy_database_is_retried_and_the_span_says_how_often(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """Another connection holds SQLite's write lock for the whole call: the store retries
    until its timeout, and the failed call's span counts the retries."""
    path = tmp_path / "busy.db"
    with ConversationStore(f"sqlite:///{path}") as store:
        store.append_message(conversation_id="c", role="user", content="first")
        store.backend.timeout = 0.3  # type: ignore[attr-defined]
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        exporter.clear()
        try:
            with pytest.raises(StorageError, match="locked"):
                store.append_message(conversation_id="c", role="user", content="second")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        [failed] = exporter.get_finished_spans()
        assert failed.status.status_code == trace.StatusCode.ERROR
        assert failed.attributes is not None and failed.attributes["convostore.retries"] > 1
        exporter.clear()
        store.append_message(conversation_id="c", role="user", content="third")
        [done] = exporter.get_finished_spans()
        assert done.attributes is not None and done.attributes["convostore.retries"] == 0
        assert "convostore.round_trips" not in done.attributes


def test_conversation_ids_are_hashed_when_asked(exporter: InMemorySpanExporter) -> None:
    provider = telemetry._settings.tracer_provider
    telemetry.configure(tracer_provider=provider, conversation_id="hash")
    with ConversationStore("memory://") as store:
        store.append_message(conversation_id="secret-cid", role="user", content="a")
    [span] = exporter.get_finished_spans()
    expected = hashlib.sha256(b"secret-cid").hexdigest()[:16]
    assert span.attributes["convostore.conversation_id.hash"] == expected
    assert "secret-cid" not in span.to_json()
    with pytest.raises(MemoryValidationError, match="conversation_id must be 'omit' or 'hash'"):
        telemetry.configure(tracer_provider=provider, conversation_id="plain")  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("inline", [True, False], ids=["on the loop", "on a thread"])
async def test_async_calls_are_children_of_the_awaiting_span(
    exporter: InMemorySpanExporter, inline: bool, tmp_path: Path
) -> None:
    tracer = trace.get_tracer("test", tracer_provider=telemetry._settings.tracer_provider)
    async with AsyncConversationStore(f"sqlite:///{tmp_path / 's.db'}", inline=inline) as store:
        with tracer.start_as_current_span("request"):
            await store.append_message(conversation_id="c", role="user", content="x")
            await store.get_history(conversation_id="c")  # always on a thread
    spans = {s.name: s for s in exporter.get_finished_spans()}
    parent = spans["request"].context.span_id
    assert spans["convostore.append_message"].parent.span_id == parent
    assert spans["convostore.get_history"].parent.span_id == parent


NO_PROVIDER = """
from convostore import AsyncConversationStore, ConversationStore
from opentelemetry import trace

made = []
for cls in (trace.NonRecordingSpan, trace.ProxyTracer):
    for attribute in ("__init__",):
        original = getattr(cls, attribute)
        def counted(self, *args, _original=original, **kwargs):
            made.append(type(self).__name__)
            return _original(self, *args, **kwargs)
        setattr(cls, attribute, counted)

store = ConversationStore("memory://")
store.append_message(conversation_id="c", role="user", content="x")
store.get_history(conversation_id="c")
print(len(made))
trace.get_tracer("control").start_span("control")  # the counting works: a ProxyTracer
print(len(made))
"""


def test_with_no_provider_no_span_object_is_made() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_PROVIDER], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "1"]


WITHOUT_THE_API = """
import sys
sys.modules["opentelemetry"] = None  # not installed: convostore without its otel extra
from convostore import ConversationStore, telemetry
assert not telemetry.AVAILABLE
with ConversationStore(sys.argv[1]) as store:
    store.append_message(conversation_id="c", role="user", content="hello there")
    store.append_messages(conversation_id="c", messages=[{"role": "assistant", "content": "hi"}])
    store.get_messages(conversation_id="c", limit=20)
    store.list_conversations(limit=20)
    print(len(store.search_messages(query="hello").items))
"""


def test_without_the_api_every_call_works(backend_url: str) -> None:
    # convostore's own install has no OpenTelemetry: the backends' measuring hooks must cost
    # nothing there and fail nowhere (an append on SQLite once raised NameError)
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_API, backend_url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]
