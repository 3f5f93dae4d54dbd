"""A session is a conversation: the store's entry point, get_messages, list_conversations and
the converters all see an Agents history."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from convostore import AsyncConversationStore, ConversationStore
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, reasoning

pytestmark = pytest.mark.anyio


async def test_the_store_entry_point(store: AsyncConversationStore) -> None:
    session = store.openai_session("entry", max_items=5)
    assert isinstance(session, ConvostoreSession)
    assert session.session_id == "entry"
    assert session.session_settings is not None
    assert session.session_settings.limit == 5
    assert session.store is store
    await session.add_items([{"role": "user", "content": "hi"}])
    blocking = store.sync.openai_session("entry")
    assert await blocking.get_items() == [{"role": "user", "content": "hi"}]
    assert blocking.session_settings is not None
    assert blocking.session_settings.limit is None


async def test_items_are_messages_of_the_conversation(store: AsyncConversationStore) -> None:
    session = ConvostoreSession("conv", store=store, user_id="alice")
    model = ScriptedModel(
        [
            [
                reasoning("rs_1", "look it up"),
                function_call("get_weather", {"city": "Oslo"}, call_id="c1"),
            ],
            [assistant_message("Cold.", item_id="msg_1")],
        ]
    )
    await Runner.run(agent_for(model), "Weather in Oslo?", session=session)
    items = await session.get_items()
    page = await store.get_messages(conversation_id="conv", limit=100)
    assert [m.content for m in page] == items
    assert [m.role for m in page] == ["user", "assistant", "assistant", "tool", "assistant"]
    newest = await store.get_messages(conversation_id="conv", limit=2, order="desc")
    assert [m.content for m in newest] == items[::-1][:2]

    listed = await store.list_conversations(user_id="alice")
    assert [(c.conversation_id, c.message_count) for c in listed.items] == [("conv", 5)]
    assert (await store.list_conversations(user_id="bob")).items == []

    await session.pop_item()
    meta = await store.get_conversation(conversation_id="conv")
    assert meta is not None
    assert meta.message_count == 4
    await session.clear_session()
    meta = await store.get_conversation(conversation_id="conv")
    assert meta is not None
    assert (meta.message_count, meta.user_id) == (0, "alice")


async def test_a_stored_agents_history_converts(store: AsyncConversationStore) -> None:
    """Chat Completions and Anthropic input from a real run: reasoning dropped, the parallel
    calls paired with their outputs, the unanswered call of an interrupted turn left out."""
    session = ConvostoreSession("convert", store=store)
    model = ScriptedModel(
        [
            [
                reasoning("rs_1", "two cities"),
                function_call("get_weather", {"city": "Oslo"}, call_id="c1"),
                function_call("get_weather", {"city": "Rome"}, call_id="c2"),
            ],
            [assistant_message("Oslo is cold, Rome is warm.")],
            [function_call("delete_file", {"path": "/x"}, call_id="d1")],
        ]
    )
    agent = agent_for(model, instructions="Be brief.")
    await Runner.run(agent, "Oslo and Rome?", session=session)
    result = await Runner.run(agent, "Now delete /x", session=session)
    assert result.interruptions  # the delete_file call waits for approval: no output stored
    messages = await store.get_messages(conversation_id="convert", limit=100)

    chat = store.to_openai_input(messages)
    assert chat == [
        {"role": "user", "content": "Oslo and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 22C in Oslo"},
        {"role": "tool", "tool_call_id": "c2", "content": "Sunny, 22C in Rome"},
        {"role": "assistant", "content": [{"type": "text", "text": "Oslo is cold, Rome is warm."}]},
        {"role": "user", "content": "Now delete /x"},
    ]

    anthropic = store.to_anthropic_messages(messages)
    assert anthropic == [
        {"role": "user", "content": "Oslo and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "c2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "Sunny, 22C in Oslo"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "Sunny, 22C in Rome"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Oslo is cold, Rome is warm."}]},
        {"role": "user", "content": "Now delete /x"},
    ]


def test_the_blocking_store_makes_sessions_too(tmp_path: Any) -> None:
    with ConversationStore(f"sqlite:///{tmp_path / 'b.db'}") as store:
        session = store.openai_session("blocking")
        assert isinstance(session, ConvostoreSession)
        assert session.store.sync is store


async def test_the_conversation_records_its_session(store: AsyncConversationStore) -> None:
    """The first items mark the conversation as an Agents session (``SESSION_FIELD``), once,
    beside metadata of its own; a tenant's conversation records the SDK's session id."""
    from agents import RunContextWrapper
    from convostore_openai import SESSION_FIELD

    await store.update_conversation(conversation_id="marked", metadata={"title": "Weather"})
    session = ConvostoreSession("marked", store=store)
    await session.add_items([{"role": "user", "content": "hi"}])
    await session.add_items([{"role": "assistant", "content": "hello"}])
    meta = await store.get_conversation(conversation_id="marked")
    assert meta is not None
    assert meta.metadata == {"title": "Weather", SESSION_FIELD: {"session_id": "marked"}}
    changes = await store.get_changes(conversation_id="marked", after=0)
    kinds = [c.kind for c in changes.items]
    assert kinds.count("conversation.updated") == 2  # the title, then the mark once

    tenanted = ConvostoreSession("chat", store=store, tenant=lambda w: w.context["tenant"])
    wrapper: RunContextWrapper[Any] = RunContextWrapper(context={"tenant": "acme"})
    await tenanted.add_items([{"role": "user", "content": "hi"}], wrapper=wrapper)
    meta = await store.get_conversation(conversation_id="acme:chat")
    assert meta is not None
    assert meta.metadata == {SESSION_FIELD: {"session_id": "chat"}}
