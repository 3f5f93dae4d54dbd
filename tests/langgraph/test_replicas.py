"""The saver and the store with a real hot standby as their read replica: a graph paused at an
interrupt resumes as it does in memory, its reads answered by the standby, and a thread
written with the standby's replay paused reads back its own checkpoints."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from convostore.backends.replicas import ReplicatedBackend
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from lg_graphs import three_node_graph, user
from pg_cluster import Pair
from test_graphs import scenario


def on_standby(backend: Any) -> int:
    assert isinstance(backend, ReplicatedBackend)
    return sum(n for k, n in backend.routed.items() if k != "primary")


@pytest.fixture
def app() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def saver(urls: tuple[str, str], app: str) -> Iterator[ConvostoreSaver]:
    primary, standby = urls
    opened = ConvostoreSaver(primary, replicas=[f"{standby}&application_name={app}"])
    yield opened
    opened.close()


def test_a_graph_runs_and_resumes_as_in_memory_with_reads_on_the_standby(
    pair: Pair, saver: ConvostoreSaver, app: str
) -> None:
    assert scenario(saver, "sync") == scenario(InMemorySaver(), "sync")
    assert on_standby(saver.backend) > 0
    assert any("checkpoint" in s for s in pair.standby.statements(app))


@pytest.mark.parametrize("durable", [True, False])
def test_an_interrupted_thread_resumes_in_another_saver_with_replay_paused(
    pair: Pair, urls: tuple[str, str], durable: bool
) -> None:
    """``durable_commits=False`` commits at ``synchronous_commit=off``: the position taken
    after the COMMIT still covers it."""
    primary, standby = urls
    pair.pause_replay()
    first = ConvostoreSaver(primary, replicas=[standby], durable_commits=durable)
    graph = three_node_graph().compile(checkpointer=first)
    cfg: Any = {"configurable": {"thread_id": "r"}}
    graph.invoke(user("ask me", 0), cfg)
    first.close()
    second = ConvostoreSaver(primary, replicas=[standby], durable_commits=durable)
    try:
        graph = three_node_graph().compile(checkpointer=second)
        assert graph.get_state(cfg).next == ("act",)
        out = graph.invoke(Command(resume="later"), cfg)
        assert [m.content for m in out["messages"]][-2:] == ["acted (later)", "reflected"]
        assert graph.get_state(cfg).next == ()
        pair.resume_replay()
        pair.wait_caught_up()
        deadline = time.monotonic() + 30  # the standby is back within max_replica_lag
        while True:
            before = on_standby(second.backend)
            assert len(list(second.list(cfg))) > 3
            if on_standby(second.backend) > before:
                break
            assert time.monotonic() < deadline, "reads did not come back to the standby"
            time.sleep(0.1)
    finally:
        second.close()


def test_the_store_reads_the_standby_and_its_own_writes(pair: Pair, urls: tuple[str, str]) -> None:
    primary, standby = urls
    store = ConvostoreStore(primary, replicas=[standby])
    try:
        store.put(("notes",), "a", {"text": "first"})
        pair.wait_caught_up()
        before = on_standby(store.backend)
        assert store.get(("notes",), "a").value == {"text": "first"}  # type: ignore[union-attr]
        assert on_standby(store.backend) > before
        pair.pause_replay()
        store.put(("notes",), "a", {"text": "second"})
        assert store.get(("notes",), "a").value == {"text": "second"}  # type: ignore[union-attr]
        assert [i.value for i in store.search(("notes",))] == [{"text": "second"}]
    finally:
        pair.resume_replay()
        store.close()


def test_replicas_go_with_a_url_not_with_a_store(urls: tuple[str, str]) -> None:
    from convostore import ConversationStore, MemoryValidationError

    primary, standby = urls
    with ConversationStore(primary) as store, pytest.raises(MemoryValidationError) as refused:
        ConvostoreSaver(store, replicas=[standby])
    assert refused.value.argument == "replicas"
