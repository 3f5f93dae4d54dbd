"""The three ways to get a saver and a store: from a core store's entry points, from a store
(blocking or async), or from a URL; and the errors for arguments that cannot work."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from lg_graphs import three_node_graph, user


def test_entry_points_on_a_core_store(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        saver = db.langgraph_checkpointer
        store = db.langgraph_store
        assert isinstance(saver, ConvostoreSaver)
        assert isinstance(store, ConvostoreStore)
        assert saver is db.langgraph_checkpointer  # one per store
        assert saver.store is db and store.store is db
        graph = three_node_graph().compile(checkpointer=saver, store=store)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        graph.invoke(user("hi", 0), cfg)
        store.put(("ns",), "k", {"v": 1})
        assert ConvostoreSaver(db).get_tuple(cfg) is not None
        assert ConvostoreStore(db).get(("ns",), "k") is not None


def test_from_an_async_store(backend_url: str) -> None:
    async def go() -> None:
        async with AsyncConversationStore(backend_url) as db:
            saver = db.langgraph_checkpointer
            assert isinstance(saver, ConvostoreSaver)
            assert saver is db.sync.langgraph_checkpointer
            assert ConvostoreStore(db).store is db.sync
            graph = three_node_graph().compile(checkpointer=saver)
            cfg: Any = {"configurable": {"thread_id": "t"}}
            await graph.ainvoke(user("hi", 0), cfg)
            assert (await graph.aget_state(cfg)).values["turns"] == 1

    asyncio.run(go())


def test_from_a_url_owns_and_closes_its_database(shared_url: str) -> None:
    with ConvostoreSaver(shared_url) as saver:
        three_node_graph().compile(checkpointer=saver).invoke(
            user("hi", 0), {"configurable": {"thread_id": "t"}}
        )
    with ConvostoreSaver.from_url(shared_url) as again:
        assert again.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    with ConvostoreStore.from_url(shared_url) as store:
        store.put(("a",), "k", {"v": 1})
    with ConvostoreStore(shared_url) as store:
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"v": 1}


def test_arguments_that_cannot_work(saver: ConvostoreSaver) -> None:
    with pytest.raises(MemoryValidationError, match="store must be"):
        ConvostoreSaver(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="thread_ids"):
        saver.prune("thread-1")
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(["t"], strategy="keep_some")
    with pytest.raises(TypeError, match="run_ids"):
        saver.delete_for_runs("run-1")
    with pytest.raises(TypeError, match="filter"):
        list(saver.list(None, filter={1: "x"}))  # type: ignore[dict-item]


@pytest.mark.parametrize("durable", [True, False])
def test_commit_durability_choice_keeps_the_same_results(backend_url: str, durable: bool) -> None:
    """Durable commits by default; ``durable_commits=False`` (synchronous_commit=off on
    PostgreSQL) stores and reads back the same checkpoints."""
    with ConversationStore(backend_url) as db:
        saver = ConvostoreSaver(db, durable_commits=durable)
        assert ConvostoreSaver(db).durable_commits is True
        graph = three_node_graph().compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        for turn in range(3):
            graph.invoke(user(f"turn {turn}", turn), cfg)
        state = graph.get_state(cfg)
        assert state.values["turns"] == 3
        assert len(list(saver.list(cfg))) == len(list(graph.get_state_history(cfg)))


@pytest.mark.parametrize(
    ("option", "value", "match"),
    [
        ("messages_key", "", "messages_key must be 1 to 256 bytes"),
        ("messages_key", "a\x00", "messages_key must not contain NUL"),
        ("messages_key", 5, "messages_key must be a str"),
        ("owner_key", "\ud800", "owner_key is not valid UTF-8"),
        ("title_key", "x" * 300, "title_key must be 1 to 256 bytes"),
        ("conversation_prefix", "a\x00", "conversation_prefix must not contain NUL"),
        ("conversation_prefix", None, "conversation_prefix must be a str"),
        ("max_conversation_messages", 0, "max_conversation_messages must be between"),
        ("max_conversation_messages", 2**70, "max_conversation_messages must be between"),
        ("max_conversation_messages", True, "max_conversation_messages must be .*int"),
    ],
)
def test_projection_options_that_cannot_work(
    cstore: ConversationStore, option: str, value: Any, match: str
) -> None:
    with pytest.raises(MemoryValidationError, match=match):
        ConvostoreSaver(cstore, **{option: value})


def test_a_thread_id_too_long_for_a_conversation_id_only_warns(cstore: ConversationStore) -> None:
    """A thread id at its limit plus a prefix passes the core's id limit: the thread runs, its
    conversation is not written."""
    from convostore_langgraph import ConversationProjectionWarning

    saver = ConvostoreSaver(cstore, conversation_prefix="lg:")
    graph = three_node_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t" * 256}}
    with pytest.warns(ConversationProjectionWarning, match="conversation_id must be 1 to 256"):
        graph.invoke(user("hi", 0), cfg)
    assert graph.get_state(cfg).values["turns"] == 1
    assert cstore.list_conversations().items == []
