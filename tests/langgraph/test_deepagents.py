"""DeepAgents on convostore: create_deep_agent(checkpointer=..., store=...) with a scripted
tool-calling model. Its state uses DeltaChannel (messages and files), so this also drives
get_delta_channel_history through a real agent."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_deepagents.py"
sys.path.insert(0, str(EXAMPLE.parent))

from langgraph_deepagents import USER, ScriptedToolModel  # noqa: E402


def agent_on(checkpointer: Any, store: Any) -> Any:
    from deepagents import create_deep_agent
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend

    backend = CompositeBackend(
        default=StateBackend(),
        routes={"/memories/": StoreBackend(namespace=lambda rt: ("memories", USER))},
    )
    return create_deep_agent(
        model=ScriptedToolModel(), checkpointer=checkpointer, store=store, backend=backend
    )


def run_example(url: str, thread: str, text: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", url, "--thread", thread, text],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_memories_written_in_one_thread_are_read_in_another_process(shared_url: str) -> None:
    from langgraph_deepagents import ask

    out_a = ask(shared_url, "a", "remember: the user prefers dark mode")  # this process
    assert "Updated file /memories/prefs.md" in out_a
    out_b = run_example(shared_url, "b", "recall")  # a new process, another thread
    assert "the user prefers dark mode" in out_b

    with ConversationStore(shared_url) as db:
        item = ConvostoreStore(db).get(("memories", USER), "/prefs.md")
        assert item is not None
        assert "dark mode" in str(item.value["content"])
        agent = agent_on(ConvostoreSaver(db), ConvostoreStore(db))
        state_a = agent.get_state({"configurable": {"thread_id": "a"}}).values
        state_b = agent.get_state({"configurable": {"thread_id": "b"}}).values
        assert "/scratch.md" in state_a["files"]  # thread-local file: only in thread a
        assert "/scratch.md" not in state_b.get("files", {})
        before = len(state_a["messages"])
        agent.invoke(
            {"messages": [HumanMessage("remember: large fonts")]},
            {"configurable": {"thread_id": "a"}},
        )
        after = agent.get_state({"configurable": {"thread_id": "a"}}).values
        assert len(after["messages"]) == 2 * before  # the history was kept and extended
        assert "/scratch.md" in after["files"]


def transcript(agent: Any, thread: str, texts: list[str]) -> list[Any]:
    cfg: Any = {"configurable": {"thread_id": thread}}
    for text in texts:
        agent.invoke({"messages": [HumanMessage(text)]}, cfg)
    state = agent.get_state(cfg)
    history = list(agent.get_state_history(cfg))
    return [
        [(type(m).__name__, m.content) for m in state.values["messages"]],
        sorted(state.values.get("files", {})),
        len(history),
        [h.next for h in history],
    ]


def test_deep_agent_state_same_as_in_memory(backend_url: str) -> None:
    texts = ["remember: tabs not spaces", "recall", "remember: dark mode", "recall"]
    expected = transcript(agent_on(InMemorySaver(), InMemoryStore()), "t", texts)
    with ConversationStore(backend_url) as db:
        got = transcript(agent_on(ConvostoreSaver(db), ConvostoreStore(db)), "t", texts)
    assert got == expected


def test_deep_agent_async(backend_url: str) -> None:
    async def go() -> str:
        with ConversationStore(backend_url) as db:
            agent = agent_on(ConvostoreSaver(db), ConvostoreStore(db))
            cfg: Any = {"configurable": {"thread_id": "x"}}
            await agent.ainvoke({"messages": [HumanMessage("remember: async works")]}, cfg)
            cfg = {"configurable": {"thread_id": "y"}}
            result = await agent.ainvoke({"messages": [HumanMessage("recall")]}, cfg)
            return str(result["messages"][-1].content)

    assert "async works" in asyncio.run(go())
