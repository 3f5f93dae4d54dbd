"""A caller's in-place change never changes stored state: LangGraph's documented tool-call edit
(get_state, change the message in place, update_state) gives what InMemorySaver gives, and
mutating anything get_state / get_tuple / list returned leaves every later read unchanged."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from lg_graphs import ChatState, three_node_graph, user


def _dump(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, str(m.id), str(m.content)) for m in values["messages"]]


def _edit_flow(checkpointer: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """Two threads; in thread "a" the last message is edited in place and written back."""
    graph = three_node_graph().compile(checkpointer=checkpointer)
    a: Any = {"configurable": {"thread_id": "a"}}
    b: Any = {"configurable": {"thread_id": "b"}}
    graph.invoke(user("hello a", 0), a)
    graph.invoke(user("hello b", 0), b)
    state = graph.get_state(a)
    last = state.values["messages"][-1]
    last.content = "EDITED"  # in place, as LangGraph's tool-call review example does
    graph.update_state(a, {"messages": [last]})
    streamed = [list(chunk) for chunk in graph.stream(user("again a", 1), a)]
    graph.invoke(user("again b", 1), b)
    return _dump(graph.get_state(a).values), _dump(graph.get_state(b).values), streamed


def test_the_documented_edit_gives_what_in_memory_gives(cstore: ConversationStore) -> None:
    ours = _edit_flow(ConvostoreSaver(cstore))
    theirs = _edit_flow(InMemorySaver())
    assert ours == theirs
    assert ("AIMessage", "reflect-3", "EDITED") in ours[0]
    assert all(m[2] != "EDITED" for m in ours[1])  # the other thread never sees it


def test_an_edit_without_update_state_is_never_seen(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    result = graph.invoke(user("hi", 0), cfg)
    result["messages"][0].content = "MUTATED RESULT"
    graph.get_state(cfg).values["messages"][1].content = "MUTATED STATE"
    tup = saver.get_tuple(cfg)
    assert tup is not None
    tup.checkpoint["channel_values"]["messages"][2].content = "MUTATED TUPLE"
    for listed in saver.list(cfg):
        for m in listed.checkpoint["channel_values"].get("messages", []):
            m.content = "MUTATED LIST"
            m.additional_kwargs["x"] = 1
    graph.invoke(user("next", 1), cfg)
    seen = _dump(graph.get_state(cfg).values)
    assert all("MUTATED" not in m[2] for m in seen)
    fresh = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)  # straight from the database
    assert fresh is not None
    assert _dump(fresh.checkpoint["channel_values"]) == seen


def test_a_nested_edit_of_a_tool_call_is_stored(cstore: ConversationStore) -> None:
    """The edit the docs show is to ``tool_calls[0]["args"]``: nested, in place."""
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("hi", 0), cfg)
    graph.update_state(
        cfg,
        {
            "messages": [
                AIMessage("", id="call", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}])
            ]
        },
    )
    state = graph.get_state(cfg)
    call = state.values["messages"][-1]
    call.tool_calls[0]["args"]["x"] = 2
    graph.update_state(cfg, {"messages": [call]})
    fresh = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)
    assert fresh is not None
    assert fresh.checkpoint["channel_values"]["messages"][-1].tool_calls[0]["args"] == {"x": 2}
    assert graph.get_state(cfg).values["messages"][-1].tool_calls[0]["args"] == {"x": 2}


@pytest.mark.parametrize("cache_size", [0, 1024])
def test_a_new_process_reads_what_this_one_reads(tmp_path: Path, cache_size: int) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with ConversationStore(url) as store:
        saver = ConvostoreSaver(store, cache_size=cache_size)
        graph = three_node_graph().compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        graph.invoke(user("hi", 0), cfg)
        state = graph.get_state(cfg)
        state.values["messages"][0].content = "edited"
        graph.update_state(cfg, {"messages": [state.values["messages"][0]]})
        here = _dump(graph.get_state(cfg).values)
    code = (
        "import sys, json; from convostore_langgraph import ConvostoreSaver;"
        f"t = ConvostoreSaver({url!r}).get_tuple({{'configurable': {{'thread_id': 't'}}}});"
        "print(json.dumps([[type(m).__name__, str(m.id), str(m.content)]"
        " for m in t.checkpoint['channel_values']['messages']]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [tuple(m) for m in json.loads(out.stdout)] == here


def test_two_reads_never_share_an_object(cstore: ConversationStore) -> None:
    """A read may hand back the items the caller itself wrote, never the same items twice:
    what one reader changes in place is invisible to every other read."""
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("hi", 0), cfg)
    first = graph.get_state(cfg).values["messages"]
    second = graph.get_state(cfg).values["messages"]
    assert all(a is not b for a, b in zip(first, second, strict=True))
    first[0].content = "CHANGED BY THE FIRST READER"
    assert second[0].content == "hi"
    assert graph.get_state(cfg).values["messages"][0].content == "hi"


def _reader_during_a_run(checkpointer: BaseCheckpointSaver[Any]) -> tuple[list[Any], list[Any]]:
    """While a run waits in its second node, another thread reads the state and changes a
    message in place (no update_state); the run then finishes."""
    started, release = threading.Event(), threading.Event()

    def first(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage("first", id="first")]}

    def second(state: ChatState) -> dict[str, Any]:
        started.set()
        release.wait()
        return {"messages": [AIMessage("second", id="second")]}

    builder = StateGraph(ChatState)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    graph = builder.compile(checkpointer=checkpointer)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    result: dict[str, Any] = {}
    run = threading.Thread(
        target=lambda: result.update(graph.invoke(user("hi", 0), cfg, durability="sync"))
    )
    run.start()
    started.wait()
    for m in graph.get_state(cfg).values["messages"]:
        m.content = "CHANGED BY A READER"
    release.set()
    run.join()
    return _dump(graph.get_state(cfg).values), _dump(result)


def test_a_reader_never_changes_a_running_graph(cstore: ConversationStore) -> None:
    """The objects a read returns are nobody else's: not the running graph's channel values,
    whose next checkpoint would store the reader's change."""
    assert _reader_during_a_run(ConvostoreSaver(cstore)) == _reader_during_a_run(InMemorySaver())


def test_a_read_never_shares_objects_with_an_invoke_result(cstore: ConversationStore) -> None:
    graph = three_node_graph().compile(checkpointer=ConvostoreSaver(cstore))
    cfg: Any = {"configurable": {"thread_id": "t"}}
    result = graph.invoke(user("hi", 0), cfg)
    state = graph.get_state(cfg)
    for m in state.values["messages"]:
        m.content = "CHANGED"
    assert [m.content for m in result["messages"]] == [
        "hi",
        "plan for: hi",
        "acted (auto)",
        "reflected",
    ]


async def _async_mutations(saver: ConvostoreSaver) -> list[Any]:
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    result = await graph.ainvoke(user("hi", 0), cfg)
    state = await graph.aget_state(cfg)
    state.values["messages"][-1].content = "EDITED"
    await graph.aupdate_state(cfg, {"messages": [state.values["messages"][-1]]})
    result["messages"][0].content = "MUTATED RESULT"
    (await graph.aget_state(cfg)).values["messages"][1].content = "MUTATED STATE"
    tup = await saver.aget_tuple(cfg)
    assert tup is not None
    tup.checkpoint["channel_values"]["messages"][2].content = "MUTATED TUPLE"
    tup.checkpoint["channel_versions"].clear()
    tup.metadata["step"] = -100
    async for listed in saver.alist(cfg):
        for m in listed.checkpoint["channel_values"].get("messages", []):
            m.content = "MUTATED LIST"
        listed.checkpoint["channel_values"].clear()
    seen = _dump((await graph.aget_state(cfg)).values)
    await graph.ainvoke(user("next", 1), cfg)
    return [seen, _dump((await graph.aget_state(cfg)).values)]


def test_async_reads_hand_out_copies(cstore: ConversationStore) -> None:
    ours = asyncio.run(_async_mutations(ConvostoreSaver(cstore)))
    assert ours == asyncio.run(_async_mutations(InMemorySaver()))  # type: ignore[arg-type]
    assert all("MUTATED" not in m[2] for state in ours for m in state)
    assert ("AIMessage", "reflect-3", "EDITED") in ours[1]


def test_pending_writes_and_metadata_are_copies(cstore: ConversationStore) -> None:
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("ask me", 0), cfg)  # interrupted in act: pending writes
    before = saver.get_tuple(cfg)
    assert before is not None and before.pending_writes
    for listed in [before, *saver.list(cfg)]:
        for _, _, value in listed.pending_writes or []:
            if isinstance(value, dict):
                value["messages"] = "MUTATED"
            elif isinstance(value, list):
                value.clear()
        listed.metadata.clear()
        listed.checkpoint["versions_seen"].clear()
    after = saver.get_tuple(cfg)
    fresh = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)
    assert after is not None and after.metadata and after.checkpoint["versions_seen"]
    assert after == fresh


def test_a_dropped_result_is_handed_on_only_while_unchanged(cstore: ConversationStore) -> None:
    """When nobody holds what the last put stored, the next read may hand those objects on;
    changed in place before being dropped, they are not (the read gets the stored state)."""
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    result = graph.invoke(user("hi", 0), cfg)
    result["messages"][0].content = "CHANGED, THEN DROPPED"
    del result
    assert _dump(graph.get_state(cfg).values)[0] == ("HumanMessage", "user-0", "hi")
    graph.invoke(user("again", 1), cfg)
    first = graph.get_state(cfg).values["messages"]  # may be the objects the last put stored
    second = graph.get_state(cfg).values["messages"]
    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_a_part_someone_still_holds_is_never_handed_on(cstore: ConversationStore) -> None:
    """The caller dropped the result but kept a message's tool call: the read must not hand
    that message on, or a later change through the kept part would reach the stored state."""
    saver = ConvostoreSaver(cstore)
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("hi", 0), cfg)
    call = AIMessage("", id="call", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}])
    graph.update_state(cfg, {"messages": [call]})
    kept = call.tool_calls[0]["args"]
    del call
    state = graph.get_state(cfg)
    kept["x"] = "CHANGED THROUGH A KEPT PART"
    assert state.values["messages"][-1].tool_calls[0]["args"] == {"x": 1}
    graph.update_state(cfg, {"messages": [AIMessage("after", id="after")]})
    fresh = ConvostoreSaver(cstore, cache_size=0).get_tuple(cfg)
    assert fresh is not None
    assert fresh.checkpoint["channel_values"]["messages"][-2].tool_calls[0]["args"] == {"x": 1}
    assert graph.get_state(cfg).values["messages"][-2].tool_calls[0]["args"] == {"x": 1}
