"""ConvostoreSession.fork: a session copied (whole, or up to an item) by the core's
fork_conversation, run on by the real Runner while the source stays as it was."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agents import RunContextWrapper
from agents.testing import ScriptedModel, assistant_message
from convostore import (
    AsyncConversationStore,
    ConversationExistsError,
    ConversationOwnershipError,
    MemoryValidationError,
)
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, run_agent, tool_turn

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]


def kinds(items: list[Any]) -> list[str]:
    return [i.get("type") or f"role:{i['role']}" for i in items]


async def two_turns(session: ConvostoreSession) -> list[Any]:
    model = ScriptedModel([*tool_turn(1, "Paris", "It is sunny."), [assistant_message("Bye!")]])
    agent = agent_for(model)
    await run_agent("run", agent, "What's the weather in Paris?", session=session)
    await run_agent("run", agent, "Thanks", session=session)
    return await session.get_items()


async def test_a_fork_runs_on_apart_from_its_source(
    make_session: Make, store: AsyncConversationStore
) -> None:
    source = make_session("chat", user_id="alice")
    items = await two_turns(source)
    assert kinds(items) == [
        "role:user",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
        "role:user",
        "message",
    ]
    fork = await source.fork("chat-b", up_to=4)  # after the first answer
    assert isinstance(fork, ConvostoreSession) and fork.session_id == "chat-b"
    assert await fork.get_items() == items[:5]
    model = ScriptedModel([[assistant_message("In Rome too.", item_id="msg_rome")]])
    await run_agent("run", agent_for(model), "And in Rome?", session=fork)
    assert kinds(await fork.get_items()) == [*kinds(items[:5]), "role:user", "message"]
    assert await source.get_items() == items  # untouched
    await source.add_items([{"role": "user", "content": "only in the source"}])
    assert len(await fork.get_items()) == 7
    meta = await store.get_conversation(conversation_id="chat-b")
    assert meta is not None and meta.user_id == "alice"
    assert meta.metadata is not None and meta.metadata["forkedFrom"]["conversationId"] == "chat"


async def test_whole_and_from_the_end(make_session: Make) -> None:
    source = make_session("chat")
    items = await two_turns(source)
    assert await (await source.fork("all")).get_items() == items
    assert await (await source.fork("but-last", up_to=-2)).get_items() == items[:-1]
    assert await (await source.fork("newest", up_to=-1)).get_items() == items
    assert await (await source.fork("first", up_to=0)).get_items() == items[:1]
    empty = await make_session("nothing").fork("nothing-b")
    assert await empty.get_items() == []


async def test_a_fork_per_tenant(make_session: Make, store: AsyncConversationStore) -> None:
    session = make_session("chat", tenant=lambda w: w.context["tenant"])
    wrapper: RunContextWrapper[Any] = RunContextWrapper(context={"tenant": "acme"})
    await session.add_items([{"role": "user", "content": "hi"}], wrapper=wrapper)
    fork = await session.fork("chat-b", wrapper=wrapper)
    assert await fork.get_items(wrapper=wrapper) == [{"role": "user", "content": "hi"}]
    meta = await store.get_conversation(conversation_id="acme:chat-b")
    assert meta is not None and meta.user_id == "acme"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"up_to": 7}, MemoryValidationError, "holds 2 items, so there is no item at position 7"),
        ({"up_to": -3}, MemoryValidationError, "no item at position -3"),
        ({"up_to": 2**64}, MemoryValidationError, "up_to must be between"),
        ({"up_to": "1"}, MemoryValidationError, "up_to must be .*int"),
        ({"new_session_id": "taken"}, ConversationExistsError, "'taken' is a conversation"),
        ({"new_session_id": "a\x00"}, MemoryValidationError, "session_id must not contain NUL"),
        ({"new_session_id": "x" * 300}, MemoryValidationError, "session_id must be 1 to 256"),
    ],
)
async def test_forks_that_cannot_be(
    make_session: Make, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    source = make_session("chat")
    await source.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    await make_session("taken").add_items([{"role": "user", "content": "mine"}])
    with pytest.raises(error, match=match):
        await source.fork(**{"new_session_id": "new", **kwargs})
    assert await make_session("new").get_items() == []
    assert await make_session("taken").get_items() == [{"role": "user", "content": "mine"}]


async def test_another_users_session_cannot_be_forked(make_session: Make) -> None:
    await make_session("chat", user_id="alice").add_items([{"role": "user", "content": "a"}])
    with pytest.raises(ConversationOwnershipError):
        await make_session("chat", user_id="mallory").fork("stolen")
    with pytest.raises(ConversationOwnershipError):
        await make_session("chat", user_id="mallory").fork("stolen", up_to=0)
    assert await make_session("stolen").get_items() == []


async def test_a_closed_session_cannot_fork(make_session: Make) -> None:
    session = make_session("chat")
    session.close()
    with pytest.raises(Exception, match="the session is closed"):
        await session.fork("b")
