"""A caller's in-place change never changes stored state: LangGraph's documented tool-call edit
(get_state, change the message in place, update_state) gives what InMemorySaver gives, and
mutating anything get_state / get_tuple / list returned leaves every later read unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import three_node_graph, user


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
    import json

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
