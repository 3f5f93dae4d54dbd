"""The session store's calls (what the Claude Agent SDK calls) read with the real OpenTelemetry
SDK's in-memory exporter: each is a span ``claude_session.<method>`` under the caller's, the
store's spans under it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from convostore import telemetry
from convostore_claude import ConvostoreSessionStore
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import recording_spans

pytestmark = pytest.mark.anyio
KEY: Any = {"project_key": "proj", "session_id": "sess"}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with recording_spans() as exporter:
        yield exporter


def _parent(span: ReadableSpan) -> int:
    assert span.parent is not None, span.name
    return span.parent.span_id


async def test_session_store_calls_are_spans_around_the_stores(
    session_store: ConvostoreSessionStore, exporter: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer("test", tracer_provider=telemetry.tracer_provider())
    with tracer.start_as_current_span("agent.turn") as turn:
        await session_store.append(KEY, [{"type": "user", "uuid": "a"}, {"type": "user"}])
        assert len(await session_store.load(KEY) or []) == 2
        assert await session_store.list_sessions("proj")
    spans = exporter.get_finished_spans()
    ours = {s.name: s for s in spans if s.name.startswith("claude_session.")}
    assert set(ours) == {
        "claude_session.append",
        "claude_session.load",
        "claude_session.list_sessions",
    }
    for span in ours.values():
        assert _parent(span) == turn.get_span_context().span_id
        assert span.attributes is not None and span.attributes["db.system.name"]
    assert ours["claude_session.load"].attributes["convostore.rows"] == 2  # type: ignore[index]
    store_spans = [s for s in spans if s.name.startswith("convostore.")]
    assert store_spans
    by_id = {s.context.span_id: s.name for s in ours.values()}
    parents = {s.name: by_id[_parent(s)] for s in store_spans}
    assert parents["convostore.get_contents"] == "claude_session.load"
    assert parents["convostore.find_conversation_briefs"] == "claude_session.list_sessions"
    assert {by_id[_parent(s)] for s in store_spans} == set(ours)
