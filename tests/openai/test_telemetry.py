"""An OpenAI Agents ``Runner.run`` with our session and a scripted model, read with the real
OpenTelemetry SDK's in-memory exporter: each call the Runner makes of the session is a span
``openai_session.<method>`` under the caller's, the store's spans under it; with no provider,
no span object is made."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agents import Runner
from agents.testing import ScriptedModel
from convostore import MemoryValidationError, telemetry
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, tool_turn
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import recording_spans

pytestmark = pytest.mark.anyio
DIALECT = {"memory": "sqlite", "sqlite": "sqlite", "postgres": "postgresql"}
Make = Callable[..., ConvostoreSession]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with recording_spans() as exporter:
        yield exporter


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _parent(span: ReadableSpan) -> int:
    assert span.parent is not None, span.name
    return span.parent.span_id


async def test_a_run_is_a_tree_of_session_and_store_spans(
    make_session: Make, exporter: InMemorySpanExporter, request: pytest.FixtureRequest
) -> None:
    system = DIALECT[request.node.callspec.params["backend_url"]]
    session = make_session("traced")
    model = ScriptedModel(tool_turn(1, "Paris", "It is sunny."))
    tracer = trace.get_tracer("test", tracer_provider=telemetry.tracer_provider())
    with tracer.start_as_current_span("agent.turn"):
        result = await Runner.run(agent_for(model), "Weather in Paris?", session=session)
    assert result.final_output == "It is sunny."
    spans = exporter.get_finished_spans()
    by_name = _by_name(spans)
    [turn] = by_name["agent.turn"]
    session_spans = [s for s in spans if s.name.startswith("openai_session.")]
    assert {s.name for s in session_spans} == {
        "openai_session.get_items",
        "openai_session.add_items",
    }
    for span in session_spans:
        assert _parent(span) == turn.context.span_id
        assert span.context.trace_id == turn.context.trace_id
        assert span.attributes is not None and span.attributes["db.system.name"] == system
    [read] = by_name["openai_session.get_items"]
    assert read.attributes is not None and read.attributes["convostore.rows"] == 0
    [contents] = by_name["convostore.get_contents"]
    assert _parent(contents) == read.context.span_id
    adds = {s.context.span_id for s in by_name["openai_session.add_items"]}
    appends = by_name["convostore.append_messages"]
    assert len(appends) == len(adds)
    assert {_parent(s) for s in appends} == adds
    assert sum(s.attributes["convostore.rows"] for s in appends) == 5  # every item stored
    assert len(await session.get_items()) == 5


async def test_a_refused_call_is_an_error_span(
    make_session: Make, exporter: InMemorySpanExporter
) -> None:
    session = make_session("refused")
    with pytest.raises(MemoryValidationError, match="items"):
        await session.add_items("not a list")  # type: ignore[arg-type]
    [span] = exporter.get_finished_spans()
    assert span.name == "openai_session.add_items"
    assert span.status.status_code == trace.StatusCode.ERROR


NO_PROVIDER = """
import asyncio, sys
from agents import Runner, set_tracing_disabled
from convostore_openai import ConvostoreSession
from opentelemetry import trace

sys.path.insert(0, sys.argv[1])
from oa_helpers import agent_for, tool_turn
from agents.testing import ScriptedModel

set_tracing_disabled(True)
made = []
for cls in (trace.NonRecordingSpan, trace.ProxyTracer):
    original = cls.__init__
    def counted(self, *args, _original=original, **kwargs):
        made.append(type(self).__name__)
        return _original(self, *args, **kwargs)
    cls.__init__ = counted

async def main():
    session = ConvostoreSession("s", url="memory://")
    model = ScriptedModel(tool_turn(1, "Paris", "It is sunny."))
    await Runner.run(agent_for(model), "Weather in Paris?", session=session)
    print(len(await session.get_items()), len(made))

asyncio.run(main())
trace.get_tracer("control").start_span("control")  # the counting works: a ProxyTracer
print(len(made))
"""


def test_with_no_provider_no_span_object_is_made() -> None:
    here = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", NO_PROVIDER, here], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["5", "0", "1"]
