"""Real graphs, not only the saver API: the same scripted scenario run against InMemorySaver and
against ConvostoreSaver must give identical states, histories, interrupts, resumes, updates,
replays, forks and subgraph states, in every durability mode."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from convostore_langgraph import ConvostoreSaver
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt, StateSnapshot
from lg_graphs import graph_with_subgraph, three_node_graph, user


def norm(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return (type(value).__name__, value.id, value.content)
    if isinstance(value, Interrupt):
        return ("Interrupt", norm(value.value))
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [norm(v) for v in value]
    return value


def snap(s: StateSnapshot) -> dict[str, Any]:
    """What a user sees of a state, minus the checkpoint ids (fresh uuids in every run)."""
    md = s.metadata or {}
    return {
        "values": norm(s.values),
        "next": s.next,
        "source": md.get("source"),
        "step": md.get("step"),
        "parents": sorted(md.get("parents", {})),
        "has_parent": s.parent_config is not None,
        "ns": re.sub(r":[0-9a-f-]+", "", s.config["configurable"].get("checkpoint_ns", "")),
        "tasks": [
            (
                t.name,
                [i.value for i in t.interrupts],
                t.error is not None,
                snap(t.state) if isinstance(t.state, StateSnapshot) else None,
            )
            for t in s.tasks
        ],
        "interrupts": [i.value for i in s.interrupts],
    }


def scenario(saver: BaseCheckpointSaver[Any], durability: str) -> list[Any]:
    """Turns, an interrupt and its resume, update_state, replay and a fork; everything seen."""
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t1"}}
    seen: list[Any] = []
    seen.append(norm(graph.invoke(user("hello", 0), cfg, durability=durability)))
    seen.append(norm(graph.invoke(user("and again", 1), cfg, durability=durability)))
    seen.append(snap(graph.get_state(cfg)))
    # an interrupt, then resume
    seen.append(norm(graph.invoke(user("please ask me", 2), cfg, durability=durability)))
    seen.append(snap(graph.get_state(cfg)))
    seen.append(norm(graph.invoke(Command(resume="yes"), cfg, durability=durability)))
    seen.append(snap(graph.get_state(cfg)))
    # update_state by message id and RemoveMessage
    graph.update_state(cfg, {"messages": [AIMessage("edited", id="reflect-2")]}, as_node="reflect")
    graph.update_state(cfg, {"messages": [RemoveMessage(id="plan-1")]}, as_node="reflect")
    seen.append(snap(graph.get_state(cfg)))
    history = list(graph.get_state_history(cfg))
    seen.append([snap(h) for h in history])
    seen.append([snap(h) for h in graph.get_state_history(cfg, limit=3)])
    seen.append([snap(h) for h in graph.get_state_history(cfg, filter={"source": "update"})])
    # replay from a checkpoint in the middle of the history
    resumable = [h for h in reversed(history) if h.next]  # oldest first
    assert resumable
    target = resumable[len(resumable) // 2]
    seen.append(norm(graph.invoke(None, target.config, durability=durability)))
    seen.append(snap(graph.get_state(cfg)))
    # fork: rewrite the state at an earlier checkpoint, then continue from the fork
    early = resumable[0]
    forked = graph.update_state(early.config, {"messages": [AIMessage("forked", id="fork")]})
    seen.append(norm(graph.invoke(None, forked, durability=durability)))
    seen.append([snap(h) for h in graph.get_state_history(cfg)])
    return seen


def subgraph_scenario(saver: BaseCheckpointSaver[Any], durability: str) -> list[Any]:
    graph = graph_with_subgraph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "sub"}}
    seen: list[Any] = []
    seen.append(norm(graph.invoke(user("hello", 0), cfg, durability=durability)))
    seen.append(norm(graph.invoke(user("ask inside", 1), cfg, durability=durability)))
    seen.append(snap(graph.get_state(cfg, subgraphs=True)))
    seen.append(norm(graph.invoke(Command(resume="inner ok"), cfg, durability=durability)))
    seen.append(snap(graph.get_state(cfg, subgraphs=True)))
    seen.append([snap(h) for h in graph.get_state_history(cfg)])
    return seen


DURABILITY = ["sync", "async", "exit"]


@pytest.mark.parametrize("durability", DURABILITY)
def test_same_as_in_memory_saver(saver: ConvostoreSaver, durability: str) -> None:
    expected = scenario(InMemorySaver(), durability)
    assert scenario(saver, durability) == expected


@pytest.mark.parametrize("durability", DURABILITY)
def test_subgraphs_same_as_in_memory_saver(saver: ConvostoreSaver, durability: str) -> None:
    expected = subgraph_scenario(InMemorySaver(), durability)
    assert subgraph_scenario(saver, durability) == expected


async def async_scenario(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "a1"}}
    seen: list[Any] = [norm(await graph.ainvoke(user("hello", 0), cfg))]
    seen.append(norm(await graph.ainvoke(user("ask now", 1), cfg)))
    seen.append(snap(await graph.aget_state(cfg)))
    seen.append(norm(await graph.ainvoke(Command(resume="fine"), cfg)))
    await graph.aupdate_state(cfg, {"messages": [AIMessage("edited", id="act-5")]})
    seen.append([snap(h) async for h in graph.aget_state_history(cfg)])
    return seen


def test_async_graph_same_as_in_memory_saver(saver: ConvostoreSaver) -> None:
    expected = asyncio.run(async_scenario(InMemorySaver()))
    assert asyncio.run(async_scenario(saver)) == expected


def test_thread_resumes_in_a_new_saver(shared_url: str) -> None:
    """A thread interrupted through one saver is resumed through another (a new process
    would see the same: nothing is kept in memory between calls that matters)."""
    first = ConvostoreSaver(shared_url)
    graph = three_node_graph().compile(checkpointer=first)
    cfg: Any = {"configurable": {"thread_id": "r"}}
    graph.invoke(user("ask me", 0), cfg)
    first.close()
    second = ConvostoreSaver(shared_url)
    graph = three_node_graph().compile(checkpointer=second)
    assert graph.get_state(cfg).next == ("act",)
    out = graph.invoke(Command(resume="later"), cfg)
    assert [m.content for m in out["messages"]][-2:] == ["acted (later)", "reflected"]
    second.close()


def test_same_without_the_in_process_cache(cstore: Any) -> None:
    """Every value read back from the database (delta chains decoded), none from memory."""
    expected = scenario(InMemorySaver(), "sync")
    assert scenario(ConvostoreSaver(cstore, cache_size=0), "sync") == expected
    expected = subgraph_scenario(InMemorySaver(), "async")
    assert subgraph_scenario(ConvostoreSaver(cstore, cache_size=0), "async") == expected
