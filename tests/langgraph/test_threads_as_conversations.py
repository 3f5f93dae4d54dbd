"""LangGraph threads as core conversations, on every backend: the conversation equals the
thread's current messages after every step (tool calls, an interrupt and its resume, a removal,
a fork, a replay, DeltaChannel graphs), its owner, title and times come from the thread, deletes
go both ways, and a projection that fails warns without failing the graph."""

from __future__ import annotations

import datetime
import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from convostore import (
    MANAGED_BY_KEY,
    ConversationManagedError,
    ConversationOwnershipError,
    ConversationStore,
    ensure_title,
)
from convostore_langgraph import ConversationProjectionWarning, ConvostoreSaver
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.types import Command
from lg_graphs import graph_with_subgraph, three_node_graph, tool_graph, user

ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def expected(messages: list[Any]) -> list[tuple[Any, ...]]:
    """What the conversation must hold for these LangChain messages, written out here."""
    out = []
    for m in messages:
        metadata: dict[str, Any] = {}
        if isinstance(m, AIMessage) and m.tool_calls:
            metadata["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
                }
                for c in m.tool_calls
            ]
        if isinstance(m, ToolMessage):
            metadata["tool_call_id"] = m.tool_call_id
        if m.name:
            metadata["name"] = m.name
        out.append((m.id, ROLES[m.type], m.content, metadata or None))
    return out


def view(db: ConversationStore, cid: str) -> list[tuple[Any, ...]]:
    return [
        (m.message_id, m.role, m.content, m.metadata) for m in db.get_history(conversation_id=cid)
    ]


def state_messages(app: Any, config: Any) -> list[Any]:
    return list(app.get_state(config).values.get("messages", []))


@pytest.fixture
def no_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversationProjectionWarning)
        yield


@pytest.fixture
def db(backend_url: str, no_warnings: None) -> Iterator[ConversationStore]:
    with ConversationStore(backend_url) as store:
        yield store


def test_the_conversation_follows_every_step(db: ConversationStore) -> None:
    """Tool calls, an interrupt and its resume, a removal, a fork and a replay: after every
    step (durability="sync", so each step's checkpoint is stored before the next runs)."""
    app = tool_graph().compile(checkpointer=db.langgraph_checkpointer)
    cfg: Any = {"configurable": {"thread_id": "t1", "user_id": "alice"}}

    def check() -> None:
        assert view(db, "t1") == expected(state_messages(app, cfg))

    steps = 0
    for text in ("weather Oslo", "delete /tmp/x"):
        for _ in app.stream(
            {"messages": [HumanMessage(text)]}, cfg, stream_mode="values", durability="sync"
        ):
            check()
            steps += 1
    assert app.get_state(cfg).next == ("approve",)  # interrupted before the dangerous call
    for _ in app.stream(Command(resume="yes"), cfg, stream_mode="values", durability="sync"):
        check()
        steps += 1
    assert steps >= 10
    messages = state_messages(app, cfg)
    assert [type(m).__name__ for m in messages].count("ToolMessage") == 3

    # a removal by update_state
    app.update_state(cfg, {"messages": [RemoveMessage(id=messages[2].id)]})
    check()
    assert len(view(db, "t1")) == len(messages) - 1

    # a fork: update_state on an earlier checkpoint, then run on from it
    history = list(app.get_state_history(cfg))
    early = next(s for s in history if len(s.values.get("messages", [])) == 4)
    forked = app.update_state(
        early.config, {"messages": [HumanMessage("weather Rome", id="u-r")]}, as_node="tools"
    )
    check()
    assert [row[0] for row in view(db, "t1")] == [m.id for m in early.values["messages"]] + ["u-r"]
    app.invoke(None, forked)
    check()
    assert view(db, "t1")[-1][2] == "answer: sunny in Rome"

    # a replay from an earlier checkpoint: the conversation shows the thread's latest again
    first = next(s for s in history if len(s.values.get("messages", [])) == 2)
    app.invoke(None, first.config)
    check()
    assert [row[2] for row in view(db, "t1")] == [
        "weather Oslo",
        "Let me check.",
        "sunny in Oslo",
        "answer: sunny in Oslo",
    ]


def test_a_thread_waiting_at_an_interrupt_says_where(shared_url: str, no_warnings: None) -> None:
    """A node's interrupt() marks the conversation with the node and the question (what the web
    view shows); the resume's checkpoint removes the mark, also when another saver (a process
    that never saw the interrupt) resumes the thread."""
    cfg: Any = {"configurable": {"thread_id": "t1", "user_id": "alice"}}

    def mark(store: ConversationStore) -> Any:
        meta = store.get_conversation(conversation_id="t1")
        assert meta is not None
        return (meta.metadata or {}).get("interrupt")

    with ConversationStore(shared_url) as first:
        app = tool_graph().compile(checkpointer=first.langgraph_checkpointer)
        app.invoke({"messages": [HumanMessage("weather Oslo")]}, cfg)
        assert mark(first) is None
        app.invoke({"messages": [HumanMessage("delete /tmp/x")]}, cfg)
        assert app.get_state(cfg).next == ("approve",)
        assert mark(first) == {
            "node": "approve",
            "value": '{"approve": ["delete_file", "get_weather"]}',
        }
        app.invoke(Command(resume="yes"), cfg)
        assert mark(first) is None
        app.invoke({"messages": [HumanMessage("delete /tmp/y")]}, cfg)
        assert mark(first) is not None
    with ConversationStore(shared_url) as second:
        app = tool_graph().compile(checkpointer=second.langgraph_checkpointer)
        assert mark(second)["node"] == "approve"
        app.invoke(Command(resume="yes"), cfg)
        assert mark(second) is None


def test_owner_title_and_times_come_from_the_thread(db: ConversationStore) -> None:
    saver = db.langgraph_checkpointer
    app = tool_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    app.invoke({"messages": [HumanMessage("weather Oslo")]}, cfg)
    app.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "t2"}})
    meta = db.get_conversation(conversation_id="t1")
    assert meta is not None
    assert (meta.user_id, meta.message_count) == ("alice", 4)
    assert meta.metadata == {
        MANAGED_BY_KEY: {"threadId": "t1", "component": "convostore-langgraph"},
        "title": "About weather Oslo",
    }
    checkpoints = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}))

    def ms(t: Any) -> int:
        return int(datetime.datetime.fromisoformat(t.checkpoint["ts"]).timestamp() * 1000)

    with_messages = [t for t in checkpoints if t.checkpoint["channel_values"].get("messages")]
    assert meta.created_at == ms(with_messages[-1])  # the first checkpoint holding a message
    assert meta.last_message_at == ms(checkpoints[0])  # the latest, with the last message
    mine = db.list_conversations(user_id="alice").items
    assert [c.conversation_id for c in mine] == ["t1"]
    assert {c.conversation_id for c in db.list_conversations().items} == {"t1", "t2"}
    with pytest.raises(ConversationOwnershipError):
        db.get_messages(conversation_id="t1", user_id="mallory")
    # a new title in the state is the conversation's title
    app.update_state(cfg, {"title": "Weather talk"})
    meta = db.get_conversation(conversation_id="t1")
    assert meta is not None and meta.metadata is not None
    assert meta.metadata["title"] == "Weather talk"


def test_reads_page_both_ways_and_the_change_feed_sees_the_thread(db: ConversationStore) -> None:
    app = tool_graph().compile(checkpointer=db.langgraph_checkpointer)
    cfg: Any = {"configurable": {"thread_id": "t"}}
    cursor = 0
    app.invoke({"messages": [HumanMessage("weather Oslo")]}, cfg)
    ids = [m.id for m in state_messages(app, cfg)]
    page = db.get_messages(conversation_id="t", limit=2)
    nxt = db.get_messages(conversation_id="t", limit=2, after=page[-1].message_id)
    back = db.get_messages(conversation_id="t", limit=2, before=nxt[-1].message_id, order="desc")
    assert [m.message_id for m in page + nxt] == ids
    assert [m.message_id for m in back] == [ids[2], ids[1]]
    changes = db.get_changes(conversation_id="t", after=cursor)
    assert [(c.kind, c.message_id) for c in changes.items if c.message_id] == [
        ("message.created", mid) for mid in ids
    ]
    cursor = changes.cursor
    app.update_state(cfg, {"messages": [RemoveMessage(id=ids[1])]})
    assert [
        (c.kind, c.message_id) for c in db.get_changes(conversation_id="t", after=cursor).items
    ] == [("message.deleted", ids[1])]


def test_the_core_refuses_to_write_a_threads_messages(db: ConversationStore) -> None:
    app = three_node_graph().compile(checkpointer=db.langgraph_checkpointer)
    app.invoke(user("hi", 0), {"configurable": {"thread_id": "t"}})
    for call in (
        lambda: db.append_message(conversation_id="t", role="user", content="x"),
        lambda: db.clear_messages(conversation_id="t"),
        lambda: db.pop_message(conversation_id="t"),
    ):
        with pytest.raises(ConversationManagedError, match="managed by 'convostore-langgraph'"):
            call()
    db.update_conversation(conversation_id="t", metadata={"pinned": True})  # metadata is open
    assert len(db.get_history(conversation_id="t")) == 4
    title = ensure_title(db, conversation_id="t", generate=lambda m: f"{len(m)} messages")
    assert title == "2 messages"  # the first user message and the plan answering it


def test_deleting_the_conversation_deletes_the_thread_and_back(db: ConversationStore) -> None:
    saver = db.langgraph_checkpointer
    app = graph_with_subgraph().compile(checkpointer=saver)
    for tid, owner in (("t1", "alice"), ("t2", "alice"), ("t3", "bob")):
        app.invoke(user("hi", 0), {"configurable": {"thread_id": tid, "user_id": owner}})
    assert sorted(c.conversation_id for c in db.list_conversations().items) == ["t1", "t2", "t3"]

    def threads() -> set[str]:
        return {t.config["configurable"]["thread_id"] for t in saver.list(None)}

    db.delete_conversation(conversation_id="t1")
    assert threads() == {"t2", "t3"}  # every namespace of t1 went with it
    assert app.get_state({"configurable": {"thread_id": "t1"}}).values == {}
    assert db.delete_user_data(user_id="alice") == 1
    assert threads() == {"t3"}
    saver.delete_thread("t3")
    assert db.list_conversations().items == []
    # a thread deleted through the core runs again from nothing
    app.invoke(user("again", 0), {"configurable": {"thread_id": "t1"}})
    assert view(db, "t1") == expected(state_messages(app, {"configurable": {"thread_id": "t1"}}))


def test_copies_removed_runs_and_backfills_follow(backend_url: str, no_warnings: None) -> None:
    with ConversationStore(backend_url) as db:
        off = ConvostoreSaver(db, messages_key=None)
        app_off = three_node_graph().compile(checkpointer=off)
        cfg: Any = {"configurable": {"thread_id": "old"}}
        app_off.invoke(user("written before", 0), cfg)
        assert db.get_conversation(conversation_id="old") is None
        saver = ConvostoreSaver(db)
        meta = saver.sync_conversation("old")
        assert meta is not None and meta.message_count == 4
        app = three_node_graph().compile(checkpointer=saver)
        assert view(db, "old") == expected(state_messages(app, cfg))
        saver.copy_thread("old", "copy")
        assert view(db, "copy") == view(db, "old")
        run_id = "0f0f0f0f-0000-0000-0000-000000000001"
        run = app.invoke(user("second", 4), {**cfg, "metadata": {"run_id": run_id}})
        assert len(run["messages"]) == 8
        saver.delete_for_runs([run_id])
        assert view(db, "old") == expected(state_messages(app, cfg))
        assert len(view(db, "old")) == 4
        saver.prune(["copy"], strategy="delete")
        assert db.get_conversation(conversation_id="copy") is None


def test_only_root_namespaces_and_message_graphs_become_conversations(
    db: ConversationStore,
) -> None:
    saver = db.langgraph_checkpointer
    app = graph_with_subgraph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "nested"}}
    app.invoke(user("hi", 0), cfg)
    assert [c.conversation_id for c in db.list_conversations().items] == ["nested"]
    assert view(db, "nested") == expected(state_messages(app, cfg))

    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class Counter(TypedDict):
        n: int

    counter = StateGraph(Counter)
    counter.add_node("inc", lambda s: {"n": s["n"] + 1})
    counter.add_edge(START, "inc")
    counter.add_edge("inc", END)
    counter.compile(checkpointer=saver).invoke({"n": 1}, {"configurable": {"thread_id": "count"}})
    assert db.get_conversation(conversation_id="count") is None
    off = ConvostoreSaver(db, messages_key=None)
    three_node_graph().compile(checkpointer=off).invoke(
        user("x", 0), {"configurable": {"thread_id": "off"}}
    )
    assert db.get_conversation(conversation_id="off") is None


def test_a_configured_key_prefix_and_owner(db: ConversationStore) -> None:
    saver = ConvostoreSaver(db, conversation_prefix="lg:", owner_key="tenant", title_key=None)
    app = tool_graph().compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t", "tenant": "acme"}}
    app.invoke({"messages": [HumanMessage("weather Oslo")]}, cfg)
    meta = db.get_conversation(conversation_id="lg:t")
    assert meta is not None and meta.user_id == "acme"
    assert meta.metadata == {MANAGED_BY_KEY: {"threadId": "t", "component": "convostore-langgraph"}}
    saver.delete_thread("t")
    assert db.get_conversation(conversation_id="lg:t") is None


def test_two_savers_taking_turns_on_one_thread(shared_url: str, no_warnings: None) -> None:
    """Another saver (another process) wrote the thread in between: each sends the whole
    list the first time it finds the conversation elsewhere than it left it."""
    with ConversationStore(shared_url) as one, ConversationStore(shared_url) as two:
        apps = [three_node_graph().compile(checkpointer=ConvostoreSaver(s)) for s in (one, two)]
        cfg: Any = {"configurable": {"thread_id": "t"}}
        for turn in range(6):
            app = apps[turn % 2 if turn < 4 else 0]
            app.invoke(user(f"turn {turn}", turn), cfg)
            assert view(one, "t") == expected(state_messages(app, cfg))
        apps[1].update_state(cfg, {"messages": [RemoveMessage(id="user-0")]})
        apps[0].invoke(user("after", 99), cfg)
        assert view(two, "t") == expected(state_messages(apps[1], cfg))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # LangGraph's async API is asyncio's
async def test_async_graphs(db: ConversationStore) -> None:
    app = tool_graph().compile(checkpointer=db.langgraph_checkpointer)
    cfg: Any = {"configurable": {"thread_id": "a"}}
    await app.ainvoke({"messages": [HumanMessage("weather Oslo")]}, cfg)
    await app.ainvoke({"messages": [HumanMessage("delete /x")]}, cfg)
    await app.ainvoke(Command(resume="no"), cfg)
    messages = (await app.aget_state(cfg)).values["messages"]
    assert view(db, "a") == expected(messages)
    assert view(db, "a")[-1][2] == "answer: refused by a human; refused by a human"
    again = await db.langgraph_checkpointer.async_conversation("a")
    assert again is not None and again.message_count == len(messages)


def test_deepagents_delta_channel_threads(db: ConversationStore) -> None:
    """DeepAgents keeps its messages in a DeltaChannel: checkpoints hold no list, the
    conversation is built from the writes."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from langgraph_deepagents import make_agent

    agent = make_agent(db)
    cfg: Any = {"configurable": {"thread_id": "deep", "user_id": "u"}}
    for text in ("remember: dark mode", "recall", "hello"):
        agent.invoke({"messages": [HumanMessage(text)]}, cfg)
        assert view(db, "deep") == expected(state_messages(agent, cfg))
    messages = state_messages(agent, cfg)
    agent.update_state(cfg, {"messages": [RemoveMessage(id=messages[0].id)]})
    assert view(db, "deep") == expected(state_messages(agent, cfg))
    fresh = ConvostoreSaver(db)  # no memory of the thread: rebuilt from its history
    again = make_agent(db)
    again.checkpointer = fresh
    again.invoke({"messages": [HumanMessage("hello again")]}, cfg)
    assert view(db, "deep") == expected(state_messages(again, cfg))


# -- failures warn and never fail the graph -------------------------------------------------------


def test_another_owner_warns_and_the_graph_goes_on(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        app = three_node_graph().compile(checkpointer=db.langgraph_checkpointer)
        app.invoke(user("mine", 0), {"configurable": {"thread_id": "t", "user_id": "alice"}})
        before = view(db, "t")
        cfg: Any = {"configurable": {"thread_id": "t", "user_id": "mallory"}}
        with pytest.warns(ConversationProjectionWarning, match="ConversationOwnershipError"):
            out = app.invoke(user("not yours", 4), cfg)
        assert len(out["messages"]) == 8  # the graph ran
        assert view(db, "t") == before  # the conversation stays alice's, as it was


def test_a_message_the_core_refuses_warns(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        app = three_node_graph().compile(checkpointer=db.langgraph_checkpointer)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        app.invoke(user("fine", 0), cfg)
        with pytest.warns(ConversationProjectionWarning, match="message_id must be 1 to 256"):
            out = app.invoke({"messages": [HumanMessage("long id", id="x" * 300)]}, cfg)
        assert out["messages"][-1].content == "reflected"
        assert len(view(db, "t")) == 4
        # once the thread no longer holds it, the conversation catches up
        app.update_state(cfg, {"messages": [RemoveMessage(id="x" * 300)]})
        assert view(db, "t") == expected(state_messages(app, cfg))


def test_the_quota_of_thread_conversations(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        saver = ConvostoreSaver(db, max_conversation_messages=6)
        app = three_node_graph().compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        app.invoke(user("one", 0), cfg)
        with pytest.warns(ConversationProjectionWarning, match="MemoryQuotaExceededError"):
            app.invoke(user("two", 4), cfg)
        assert len(state_messages(app, cfg)) == 8
        assert len(view(db, "t")) == 6  # as far as the quota let it go


def test_a_conversation_of_someone_else_is_not_taken(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        db.append_message(conversation_id="t", role="user", content="an unrelated chat")
        app = three_node_graph().compile(checkpointer=db.langgraph_checkpointer)
        with pytest.warns(ConversationProjectionWarning, match="ConversationExistsError"):
            app.invoke(user("hi", 0), {"configurable": {"thread_id": "t"}})
        assert [m.content for m in db.get_history(conversation_id="t")] == ["an unrelated chat"]
        db.langgraph_checkpointer.delete_thread("t")  # not its conversation: left alone
        assert db.get_conversation(conversation_id="t") is not None
        # an empty conversation made first (a title, say) is adopted
        db.update_conversation(conversation_id="fresh", metadata={"title": "Made first"})
        app.invoke(user("hi", 0), {"configurable": {"thread_id": "fresh"}})
        meta = db.get_conversation(conversation_id="fresh")
        assert meta is not None and meta.message_count == 4
        assert meta.metadata is not None and meta.metadata["title"] == "Made first"


def test_a_checkpoint_is_written_with_its_conversation(shared_url: str) -> None:
    """The projection is in the checkpoint's transaction: a reader in another connection
    never sees a checkpoint whose conversation lags behind."""
    with ConversationStore(shared_url) as db, ConversationStore(shared_url) as reader:
        app = three_node_graph().compile(checkpointer=db.langgraph_checkpointer)
        cfg: Any = {"configurable": {"thread_id": "t"}}
        other = three_node_graph().compile(checkpointer=ConvostoreSaver(reader))
        for turn in range(3):
            for _ in app.stream(user(f"t{turn}", 4 * turn), cfg, durability="sync"):
                assert view(reader, "t") == expected(state_messages(other, cfg))


def test_two_concurrent_titles_of_a_thread_leave_one(shared_url: str, no_warnings: None) -> None:
    """ensure_title from two stores at once on a thread's conversation: both generators may
    run (another process, as it were), one title is kept and both return it; the graph's next
    checkpoint leaves it (the state names no title)."""
    import threading

    from convostore.conventions import titles

    with ConversationStore(shared_url) as one, ConversationStore(shared_url) as two:
        # a thread whose per-process locks differ for the two stores, as two processes' do (a
        # shared lock stripe would let one generator wait for the other at the barrier)
        tid = next(
            f"t{i}"
            for i in range(1000)
            if titles._lock(one, f"t{i}") is not titles._lock(two, f"t{i}")
        )
        app = three_node_graph().compile(checkpointer=one.langgraph_checkpointer)
        cfg: Any = {"configurable": {"thread_id": tid}}
        app.invoke(user("hi", 0), cfg)
        barrier = threading.Barrier(2)
        results: list[str | None] = []

        def title(store: ConversationStore, text: str) -> None:
            def generate(_: Any) -> str:
                barrier.wait(timeout=30)  # both have read "no title yet"
                return text

            results.append(ensure_title(store, conversation_id=tid, generate=generate))

        workers = [
            threading.Thread(target=title, args=(s, n)) for s, n in ((one, "One"), (two, "Two"))
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert len(set(results)) == 1 and results[0] in ("One", "Two")
        app.invoke(user("more", 4), cfg)
        meta = one.get_conversation(conversation_id=tid)
        assert meta is not None and meta.metadata is not None
        assert meta.metadata["title"] == results[0]
