"""The writer x reader matrix (tests/matrix/readers.py) for LangGraph's writers: a graph with
tool calls and an approval interrupt (tests/langgraph/lg_graphs.py) and a DeepAgents agent
(examples/langgraph_deepagents.py, its messages in a DeltaChannel); every reader on SQLite
and PostgreSQL."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore
from langchain_core.messages import HumanMessage
from langgraph.types import Command
from lg_graphs import tool_graph

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "matrix"))
sys.path.insert(0, str(ROOT / "examples"))
from langgraph_deepagents import make_agent  # noqa: E402
from readers import READERS, Written, check  # noqa: E402

MANAGED = {"managedBy"}


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call as stored (and as Chat Completions takes it)."""
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def tool_use(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def result(cid: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": text}


def graph_written(db: ConversationStore) -> Written:
    """Two turns of the tool graph: a call answered, then two calls after an approval."""
    app = tool_graph().compile(checkpointer=db.langgraph_checkpointer)
    cfg: Any = {"configurable": {"thread_id": "lg-chat", "user_id": "alice"}}
    app.invoke({"messages": [HumanMessage("weather Oslo", id="h1")]}, cfg)
    app.invoke({"messages": [HumanMessage("delete /tmp/x", id="h2")]}, cfg)
    app.invoke(Command(resume="yes"), cfg)
    oslo = call("call-1-w", "get_weather", {"city": "Oslo"})
    delete = call("call-5-d", "delete_file", {"path": "/tmp/x"})
    paris = call("call-5-w", "get_weather", {"city": "Paris"})

    def gone() -> None:  # the thread went with its conversation
        assert app.get_state(cfg).values == {}
        assert list(db.langgraph_checkpointer.list(cfg)) == []

    return Written(
        conversation_id="lg-chat",
        user_id="alice",
        title="About weather Oslo",
        metadata_keys=MANAGED,
        managed=True,
        gone=gone,
        ids=["h1", "ai-1", None, "ai-3", "h2", "ai-5", None, None, "ai-8"],
        messages=[
            ("user", "weather Oslo", None),
            ("assistant", "Let me check.", {"tool_calls": [oslo]}),
            ("tool", "sunny in Oslo", {"tool_call_id": "call-1-w", "name": "get_weather"}),
            ("assistant", "answer: sunny in Oslo", None),
            ("user", "delete /tmp/x", None),
            ("assistant", "", {"tool_calls": [delete, paris]}),
            ("tool", "deleted /tmp/x", {"tool_call_id": "call-5-d", "name": "delete_file"}),
            ("tool", "sunny in Paris", {"tool_call_id": "call-5-w", "name": "get_weather"}),
            ("assistant", "answer: deleted /tmp/x; sunny in Paris", None),
        ],
        anthropic=[
            {"role": "user", "content": "weather Oslo"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    tool_use("call-1-w", "get_weather", {"city": "Oslo"}),
                ],
            },
            {"role": "user", "content": [result("call-1-w", "sunny in Oslo")]},
            {"role": "assistant", "content": "answer: sunny in Oslo"},
            {"role": "user", "content": "delete /tmp/x"},
            {
                "role": "assistant",
                "content": [
                    tool_use("call-5-d", "delete_file", {"path": "/tmp/x"}),
                    tool_use("call-5-w", "get_weather", {"city": "Paris"}),
                ],
            },
            {
                "role": "user",
                "content": [
                    result("call-5-d", "deleted /tmp/x"),
                    result("call-5-w", "sunny in Paris"),
                ],
            },
            {"role": "assistant", "content": "answer: deleted /tmp/x; sunny in Paris"},
        ],
        openai=[
            {"role": "user", "content": "weather Oslo"},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [oslo]},
            {"role": "tool", "tool_call_id": "call-1-w", "content": "sunny in Oslo"},
            {"role": "assistant", "content": "answer: sunny in Oslo"},
            {"role": "user", "content": "delete /tmp/x"},
            {"role": "assistant", "content": None, "tool_calls": [delete, paris]},
            {"role": "tool", "tool_call_id": "call-5-d", "content": "deleted /tmp/x"},
            {"role": "tool", "tool_call_id": "call-5-w", "content": "sunny in Paris"},
            {"role": "assistant", "content": "answer: deleted /tmp/x; sunny in Paris"},
        ],
    )


def deepagent_written(db: ConversationStore) -> Written:
    """Two turns of a DeepAgent: two file writes, then a read of the memory file."""
    agent = make_agent(db)
    cfg: Any = {"configurable": {"thread_id": "deep-chat", "user_id": "bob"}}
    agent.invoke({"messages": [HumanMessage("remember: dark mode", id="d1")]}, cfg)
    agent.invoke({"messages": [HumanMessage("recall", id="d2")]}, cfg)
    prefs = call(
        "call-1-1", "write_file", {"file_path": "/memories/prefs.md", "content": "dark mode"}
    )
    scratch = call(
        "call-1-2", "write_file", {"file_path": "/scratch.md", "content": "noted: dark mode"}
    )
    read = call("call-2-1", "read_file", {"file_path": "/memories/prefs.md"})
    wrote = "tool results: Updated file /memories/prefs.md | Updated file /scratch.md"
    lines = "@@ lines 1-1 of 1 @@\ndark mode"

    def gone() -> None:
        assert agent.get_state(cfg).values == {}

    return Written(
        conversation_id="deep-chat",
        user_id="bob",
        metadata_keys=MANAGED,
        managed=True,
        gone=gone,
        ids=["d1", None, None, None, None, "d2", None, None, None],
        messages=[
            ("user", "remember: dark mode", None),
            ("assistant", "", {"tool_calls": [prefs, scratch]}),
            (
                "tool",
                "Updated file /memories/prefs.md",
                {"tool_call_id": "call-1-1", "name": "write_file"},
            ),
            (
                "tool",
                "Updated file /scratch.md",
                {"tool_call_id": "call-1-2", "name": "write_file"},
            ),
            ("assistant", wrote, None),
            ("user", "recall", None),
            ("assistant", "", {"tool_calls": [read]}),
            ("tool", lines, {"tool_call_id": "call-2-1", "name": "read_file"}),
            ("assistant", f"tool results: {lines}", None),
        ],
        anthropic=[
            {"role": "user", "content": "remember: dark mode"},
            {
                "role": "assistant",
                "content": [
                    tool_use(
                        "call-1-1",
                        "write_file",
                        {"file_path": "/memories/prefs.md", "content": "dark mode"},
                    ),
                    tool_use(
                        "call-1-2",
                        "write_file",
                        {"file_path": "/scratch.md", "content": "noted: dark mode"},
                    ),
                ],
            },
            {
                "role": "user",
                "content": [
                    result("call-1-1", "Updated file /memories/prefs.md"),
                    result("call-1-2", "Updated file /scratch.md"),
                ],
            },
            {"role": "assistant", "content": wrote},
            {"role": "user", "content": "recall"},
            {
                "role": "assistant",
                "content": [tool_use("call-2-1", "read_file", {"file_path": "/memories/prefs.md"})],
            },
            {"role": "user", "content": [result("call-2-1", lines)]},
            {"role": "assistant", "content": f"tool results: {lines}"},
        ],
        openai=[
            {"role": "user", "content": "remember: dark mode"},
            {"role": "assistant", "content": None, "tool_calls": [prefs, scratch]},
            {
                "role": "tool",
                "tool_call_id": "call-1-1",
                "content": "Updated file /memories/prefs.md",
            },
            {"role": "tool", "tool_call_id": "call-1-2", "content": "Updated file /scratch.md"},
            {"role": "assistant", "content": wrote},
            {"role": "user", "content": "recall"},
            {"role": "assistant", "content": None, "tool_calls": [read]},
            {"role": "tool", "tool_call_id": "call-2-1", "content": lines},
            {"role": "assistant", "content": f"tool results: {lines}"},
        ],
    )


WRITERS: dict[str, Callable[[ConversationStore], Written]] = {
    "langgraph": graph_written,
    "deepagents": deepagent_written,
}


@pytest.fixture
def db(shared_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="other", role="user", content="x", user_id="carol")
        yield store


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_langgraph_writers(db: ConversationStore, writer: str, reader: str) -> None:
    written = WRITERS[writer](db)
    db.append_message(conversation_id="newest", role="user", content="y")
    check(db, written, reader)
