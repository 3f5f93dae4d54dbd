"""``telemetry.trace_methods`` (an adapter's framework calls as spans around the store's) and
``telemetry.following_tracer_provider`` on a class of the test's own, read with the real
OpenTelemetry SDK's in-memory exporter; an async call that gives way to a worker thread."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError, telemetry
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import recording_spans


class Framework:
    """An adapter: each method a framework would call makes store calls."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    def save(self, texts: list[str]) -> list[str]:
        return self.store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": t} for t in texts]
        )

    async def asave(self, text: str) -> None:
        self.store.append_message(conversation_id="c", role="user", content=text)

    def each(self) -> Iterator[str]:
        for message in self.store.get_history(conversation_id="c"):
            yield str(message.content)
            self.store.get_conversation(conversation_id="c")  # work between the items

    def refuse(self) -> None:
        self.store.get_messages(conversation_id="c", limit=0)


telemetry.trace_methods(
    Framework,
    "framework",
    ["save", "asave", "each", "refuse"],
    lambda f: {"db.system.name": f.store.backend.dialect},
)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with recording_spans() as exporter:
        yield exporter


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def test_plain_async_and_generator_methods_are_spans_around_the_stores(
    exporter: InMemorySpanExporter,
) -> None:
    framework = Framework(ConversationStore("memory://"))
    tracer = trace.get_tracer("test", tracer_provider=telemetry.tracer_provider())
    with tracer.start_as_current_span("turn") as turn:
        framework.save(["a", "b"])
        anyio.run(framework.asave, "c")
        assert list(framework.each()) == ["a", "b", "c"]
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    turn_id = turn.get_span_context().span_id
    for name, rows, child in [
        ("framework.save", 2, "convostore.append_messages"),
        ("framework.asave", None, "convostore.append_message"),
        ("framework.each", 3, "convostore.get_history"),
    ]:
        span = by_name[name]
        assert _parent(span) == turn_id
        assert span.kind == trace.SpanKind.INTERNAL
        assert dict(span.attributes or {}) == {
            "db.system.name": "sqlite",
            **({} if rows is None else {"convostore.rows": rows}),
        }
        assert _parent(by_name[child]) == span.context.span_id
    # the work between a generator's items is inside its span too
    gets = [s for s in spans if s.name == "convostore.get_conversation"]
    assert len(gets) == 3
    assert {_parent(s) for s in gets} == {by_name["framework.each"].context.span_id}


def test_a_generator_stopped_early_and_a_refused_call(exporter: InMemorySpanExporter) -> None:
    framework = Framework(ConversationStore("memory://"))
    framework.save(["a", "b", "c"])
    exporter.clear()
    items = framework.each()
    assert next(items) == "a"
    items.close()  # the caller stopped: the span ends, no error
    with pytest.raises(MemoryValidationError):
        framework.refuse()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    stopped = spans["framework.each"]
    assert stopped.end_time is not None and stopped.status.status_code == trace.StatusCode.UNSET
    assert stopped.attributes is not None and stopped.attributes["convostore.rows"] == 1
    refused = spans["framework.refuse"]
    assert refused.status.status_code == trace.StatusCode.ERROR
    assert [e.name for e in refused.events] == ["exception"]
    assert _parent(spans["convostore.get_messages"]) == refused.context.span_id


def test_spans_around_the_store_follow_the_configured_provider() -> None:
    tracer = telemetry.following_tracer_provider().get_tracer("around")
    exported = []
    for _ in range(2):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        telemetry.configure(tracer_provider=provider)
        with tracer.start_as_current_span("request"):
            ConversationStore("memory://").get_conversation(conversation_id="c")
        exported.append(sorted(s.name for s in exporter.get_finished_spans()))
    telemetry.configure(tracer_provider=None)
    assert exported == [["convostore.get_conversation", "request"]] * 2


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def held(tmp_path: Path) -> AsyncIterator[tuple[AsyncConversationStore, threading.Lock]]:
    async with AsyncConversationStore(f"sqlite:///{tmp_path / 'held.db'}") as store:
        yield store, store.sync.backend._lock  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_a_call_that_gives_way_to_a_thread_is_not_an_error(
    exporter: InMemorySpanExporter, held: tuple[AsyncConversationStore, threading.Lock]
) -> None:
    """The store's lock is taken: the attempt on the event loop gives way (its span says so,
    without an error, and no duration is recorded for it), the call runs on a thread."""
    store, lock = held
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    telemetry.configure(meter_provider=meters)
    try:
        lock.acquire()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(
                    lambda: store.append_message(conversation_id="c", role="user", content="x")
                )
                while not exporter.get_finished_spans():
                    await anyio.sleep(0.01)  # the attempt on the loop, given way
                lock.release()
        finally:
            if lock.locked():
                lock.release()
        gave_way, done = exporter.get_finished_spans()
        assert gave_way.attributes is not None and gave_way.attributes["convostore.gave_way"]
        assert gave_way.status.status_code == trace.StatusCode.UNSET and not gave_way.events
        assert done.attributes is not None and "convostore.gave_way" not in done.attributes
        assert done.attributes["convostore.rows"] == 1
        data = reader.get_metrics_data()
        points: list[Any] = [
            p
            for r in data.resource_metrics
            for s in r.scope_metrics
            for m in s.metrics
            if m.name == "convostore.call.duration"
            for p in m.data.data_points
        ]
        assert [(dict(p.attributes), p.count) for p in points] == [
            ({"convostore.method": "append_message", "db.system.name": "sqlite"}, 1)
        ]
    finally:
        telemetry.configure(meter_provider=None)
        meters.shutdown()
