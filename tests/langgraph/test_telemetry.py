"""A LangGraph run with our saver, read with the real OpenTelemetry SDK's in-memory exporter:
each call LangGraph makes of the saver is a span ``langgraph.<method>`` under the caller's,
the store's spans under it; with no provider, no span object is made."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from convostore import ConversationStore, telemetry
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from lg_graphs import three_node_graph, user
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_sdk import recording_spans

DIALECT = {"memory": "sqlite", "sqlite": "sqlite", "postgres": "postgresql"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # LangGraph's async surface runs on asyncio


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    with recording_spans() as exporter:
        yield exporter


def _tracer() -> trace.Tracer:
    return trace.get_tracer("test", tracer_provider=telemetry.tracer_provider())


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def _check_tree(
    spans: tuple[ReadableSpan, ...], system: str, checkpoints: int
) -> dict[str, list[ReadableSpan]]:
    """The saver's spans are children of ``agent.turn``, the store's of a ``langgraph.put``."""
    by_name = _by_name(spans)
    [turn] = by_name["agent.turn"]
    saver_spans = [s for s in spans if s.name.startswith("langgraph.")]
    assert {s.name for s in saver_spans} == {
        "langgraph.get_tuple",
        "langgraph.put",
        "langgraph.put_writes",
    }
    for span in saver_spans:
        assert span.parent is not None and span.parent.span_id == turn.context.span_id
        assert span.context.trace_id == turn.context.trace_id
        assert span.attributes is not None and span.attributes["db.system.name"] == system
    assert len(by_name["langgraph.put"]) == checkpoints
    assert len(by_name["langgraph.get_tuple"]) == 1  # the thread's latest, once
    puts = {s.context.span_id for s in by_name["langgraph.put"]}
    store_spans = [s for s in spans if s.name.startswith("convostore.")]
    assert store_spans  # the thread's conversation, written with its checkpoints
    for span in store_spans:
        assert span.name == "convostore.start_sync_messages"
        assert span.parent is not None and span.parent.span_id in puts
        assert span.context.trace_id == turn.context.trace_id
    return by_name


def test_a_graph_run_is_a_tree_of_saver_and_store_spans(
    saver: ConvostoreSaver, exporter: InMemorySpanExporter, request: pytest.FixtureRequest
) -> None:
    system = DIALECT[request.node.callspec.params["backend_url"]]
    graph = three_node_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t-traced"}}
    with _tracer().start_as_current_span("agent.turn"):
        state = graph.invoke(user("hello", 0), config)
    assert len(state["messages"]) == 4
    # input, then plan, act and reflect: a checkpoint each
    by_name = _check_tree(exporter.get_finished_spans(), system, checkpoints=5)
    read = by_name["langgraph.get_tuple"][0]
    assert "convostore.rows" not in (read.attributes or {})  # a tuple, not rows
    assert len(by_name["convostore.start_sync_messages"]) == 4  # each put that moved messages


@pytest.mark.anyio
async def test_the_async_surface_makes_the_same_spans(
    saver: ConvostoreSaver, exporter: InMemorySpanExporter, request: pytest.FixtureRequest
) -> None:
    system = DIALECT[request.node.callspec.params["backend_url"]]
    graph = three_node_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t-async"}}
    with _tracer().start_as_current_span("agent.turn"):
        await graph.ainvoke(user("hello", 0), config)
    _check_tree(exporter.get_finished_spans(), system, checkpoints=5)


def test_list_is_one_span_while_it_is_iterated(
    saver: ConvostoreSaver, exporter: InMemorySpanExporter
) -> None:
    graph = three_node_graph().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t-list"}}
    graph.invoke(user("hello", 0), config)
    exporter.clear()
    with _tracer().start_as_current_span("history"):
        history = list(graph.get_state_history(config))
    assert len(history) == 5
    by_name = _by_name(exporter.get_finished_spans())
    [listed] = by_name["langgraph.list"]
    [outer] = by_name["history"]
    assert listed.parent is not None and listed.parent.span_id == outer.context.span_id
    assert listed.attributes is not None and listed.attributes["convostore.rows"] == 5


def test_a_failed_call_is_an_error_span(
    saver: ConvostoreSaver, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(Exception, match="thread_id"):
        saver.get_tuple({"configurable": {"thread_id": ""}})
    [span] = exporter.get_finished_spans()
    assert span.name == "langgraph.get_tuple"
    assert span.status.status_code == trace.StatusCode.ERROR
    assert span.events[0].name == "exception"


def test_the_key_value_store_batches_are_spans(
    cstore: ConversationStore, exporter: InMemorySpanExporter
) -> None:
    store = ConvostoreStore(cstore)
    with _tracer().start_as_current_span("agent.turn"):
        store.put(("users", "u1"), "profile", {"name": "Ada"})
        assert store.get(("users", "u1"), "profile") is not None
    by_name = _by_name(exporter.get_finished_spans())
    [turn] = by_name["agent.turn"]
    batches = by_name["langgraph_store.batch"]
    assert len(batches) == 2
    assert all(b.parent is not None and b.parent.span_id == turn.context.span_id for b in batches)
    assert batches[1].attributes is not None and batches[1].attributes["convostore.rows"] == 1


NO_PROVIDER = """
import sys
from convostore_langgraph import ConvostoreSaver
from opentelemetry import trace

sys.path.insert(0, sys.argv[1])
from lg_graphs import three_node_graph, user

made = []
for cls in (trace.NonRecordingSpan, trace.ProxyTracer):
    original = cls.__init__
    def counted(self, *args, _original=original, **kwargs):
        made.append(type(self).__name__)
        return _original(self, *args, **kwargs)
    cls.__init__ = counted

with ConvostoreSaver("memory://") as saver:
    graph = three_node_graph().compile(checkpointer=saver)
    graph.invoke(user("hello", 0), {"configurable": {"thread_id": "t"}})
    print(len(list(saver.list(None))), len(made))
trace.get_tracer("control").start_span("control")  # the counting works: a ProxyTracer
print(len(made))
"""


def test_with_no_provider_no_span_object_is_made() -> None:
    here = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", NO_PROVIDER, here], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["5", "0", "1"]
