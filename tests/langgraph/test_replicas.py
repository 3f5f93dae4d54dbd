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


# -- the DeepAgents memory backend: the reads that decide a write are the primary's -------------


@pytest.fixture
def lagging(pair: Pair, urls: tuple[str, str]) -> Iterator[tuple[Any, Any, str]]:
    """A writer that is not the bridge's process (a store without replicas: its writes are no
    position the bridge's store knows, as another process's), the bridge's store reading a
    standby whose replay is paused after ``/notes.md`` = ``a\\n`` and ``/plan.md`` were
    written (``max_replica_lag`` 30 s: the standby keeps the reads), and the memory store."""
    from convostore import ConversationStore

    primary, standby = urls
    writer = ConversationStore(primary)
    sid = writer.create_memory_store("notes", user_id="alice").memory_store_id
    writer.create_memory(sid, "notes.md", "a\n", user_id="alice")
    writer.create_memory(sid, "plan.md", "draft\n", user_id="alice")
    store = ConversationStore(primary, replicas=[standby], max_replica_lag=30)
    pair.wait_caught_up()
    pair.pause_replay()
    try:
        yield writer, store, sid
    finally:
        pair.resume_replay()
        store.close()
        writer.close()


def test_the_memory_backend_decides_its_writes_on_the_primary_with_replay_paused(
    lagging: tuple[Any, Any, str],
) -> None:
    from convostore_langgraph import ConvostoreMemoryBackend

    writer, store, sid = lagging
    notes = writer.get_memory_by_path(sid, "notes.md", user_id="alice")
    writer.update_memory(sid, notes.entry_id, "a\nb\n", notes.version, user_id="alice")
    writer.create_memory(sid, "todo.md", "milk\n", user_id="alice")
    writer.delete_memory(
        sid, writer.get_memory_by_path(sid, "plan.md", user_id="alice").entry_id, user_id="alice"
    )
    backend = ConvostoreMemoryBackend(store, sid, user_id="alice")
    # a plain read is the standby's, which has not replayed the other writer's changes
    assert backend.read("/notes.md").file_data["content"] == "a\n"  # type: ignore[index]
    assert on_standby(store.backend) > 0
    # an edit reads the version it replaces on the primary: "b" is there
    assert backend.edit("/notes.md", "b", "B").error is None
    # a write over a file only the primary has: an update of it, not a create that conflicts
    # with it until the attempts run out
    assert backend.write("/todo.md", "eggs\n").error is None
    # a delete of a file the primary deleted already: not found, as the primary says
    assert backend.delete("/plan.md").error is not None
    current = {
        e.path: writer.get_memory(sid, e.entry_id, user_id="alice").content
        for e in writer.list_memories(sid, user_id="alice").items
    }
    assert current == {"notes.md": "a\nB\n", "todo.md": "eggs\n"}
