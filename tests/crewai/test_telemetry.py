"""CrewAI's ``Memory`` on our storage (scripted LLM, keyword embedder: offline), read with the
real OpenTelemetry SDK's in-memory exporter: each call Memory makes of the storage is a span
``crewai_memory.<method>`` in the caller's trace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from convostore import telemetry
from convostore_crewai import ConvostoreMemoryStorage, keyword_embedder
from crewai import Memory
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import recording_spans
from scripted import ScriptedLLM


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    # conftest turns OpenTelemetry's SDK off for CrewAI's own telemetry (which stays off by
    # CREWAI_DISABLE_TELEMETRY); this test's provider needs it on
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    with recording_spans() as exporter:
        yield exporter


def test_remember_and_recall_are_storage_spans_in_the_callers_trace(
    backend_url: str, exporter: InMemorySpanExporter
) -> None:
    memory = Memory(
        storage=ConvostoreMemoryStorage(backend_url),
        embedder=keyword_embedder,
        llm=ScriptedLLM(model="scripted"),
    )
    tracer = trace.get_tracer("test", tracer_provider=telemetry.tracer_provider())
    try:
        with tracer.start_as_current_span("crew.kickoff") as kickoff:
            memory.remember(
                "The team chose PostgreSQL for the billing service",
                scope="/decisions",
                categories=["db"],
                importance=0.9,
            )
            matches = memory.recall("which database for billing", depth="shallow")
        assert matches[0].record.content.startswith("The team chose PostgreSQL")
    finally:
        memory.close()
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("crewai_memory.")]
    names = {s.name for s in spans}
    assert {"crewai_memory.save", "crewai_memory.search"} <= names
    caller = kickoff.get_span_context()
    for span in spans:
        assert span.context.trace_id == caller.trace_id, span.name
        assert span.parent is not None and span.parent.span_id == caller.span_id, span.name
        assert span.attributes is not None and span.attributes["db.system.name"]
    found = [s.attributes["convostore.rows"] for s in spans if s.name == "crewai_memory.search"]
    assert max(found) >= 1  # type: ignore[type-var]
