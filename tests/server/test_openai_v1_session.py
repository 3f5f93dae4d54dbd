"""The Agents SDK's own tests of `OpenAIConversationsSession` (openai-agents' tests/memory:
`test_openai_conversations_session.py`, `..._pagination.py`), ported from a mocked client to
the real `AsyncOpenAI` against a live server: what each upstream test checks of the calls it
mocked is checked here on what the server holds afterwards. The upstream tests of the
constructor's default client and of errors a mock raises on demand have no server side."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from agents import Agent, Runner
from agents.memory import OpenAIConversationsSession, SessionSettings
from agents.memory.openai_conversations_session import start_openai_conversations_session
from agents.testing import ScriptedModel, assistant_message
from openai import AsyncOpenAI
from served import Server

pytestmark = pytest.mark.anyio


Clients = Callable[..., AsyncOpenAI]


@pytest.fixture
async def clients(server: Server) -> AsyncIterator[Clients]:
    """``clients(who="alice")``: an ``AsyncOpenAI`` on the server with ``who``'s token (a
    bad one for ``None``), each closed on the test's loop when it ends."""
    made: list[AsyncOpenAI] = []

    def make(who: str | None = "alice") -> AsyncOpenAI:
        key = "not-a-token" if who is None else server.tokens[who]
        made.append(AsyncOpenAI(base_url=f"{server.base}/v1", api_key=key, max_retries=0))
        return made[-1]

    yield make
    for client in made:
        await client.close()


def conversations_of(server: Server, who: str = "alice") -> set[str]:
    page = server.client(who).get("/conversations", params={"limit": 100}).json()
    return {c["conversationId"] for c in page["items"]}


async def texts(api: AsyncOpenAI, conv: str) -> list[str]:
    items = [i async for i in api.conversations.items.list(conv, order="asc")]
    return [i.content[0].text for i in items]  # type: ignore[union-attr]


def said(text: str, role: str = "user") -> Any:
    return {"role": role, "content": text}


# -- starting a session ------------------------------------------------------------------


async def test_start_makes_an_empty_conversation_on_the_server(
    server: Server, clients: Clients
) -> None:
    api = clients()
    conv = await start_openai_conversations_session(api)
    assert conv.startswith("conv_") and conv in conversations_of(server)
    assert await texts(api, conv) == []


async def test_a_given_conversation_id_is_used_and_none_is_made(
    server: Server, clients: Clients
) -> None:
    api = clients()
    conv = await start_openai_conversations_session(api)
    before = conversations_of(server)
    session = OpenAIConversationsSession(conversation_id=conv, openai_client=api)
    await session.add_items([said("Hello")])
    assert session.session_id == conv and conversations_of(server) == before
    assert await texts(api, conv) == ["Hello"]


async def test_the_conversation_is_made_lazily_once(server: Server, clients: Clients) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    with pytest.raises(ValueError, match="not yet available"):
        session.session_id  # noqa: B018
    before = conversations_of(server)
    assert await session.get_items() == []
    first = session.session_id
    await session.get_items()
    await session.add_items([said("Hello")])
    assert session.session_id == first
    assert conversations_of(server) - before == {first}


async def test_concurrent_first_writes_share_one_conversation(
    server: Server, clients: Clients
) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    before = conversations_of(server)
    await asyncio.gather(
        session.add_items([said("First message")]), session.add_items([said("Second message")])
    )
    assert conversations_of(server) - before == {session.session_id}
    assert sorted(await texts(api, session.session_id)) == ["First message", "Second message"]


# -- the session's operations ------------------------------------------------------------


async def test_add_items_stores_them_in_order(server: Server, clients: Clients) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    await session.add_items([said("Hello"), said("Hi there!", "assistant")])
    items = await session.get_items()
    assert [(i["role"], i["content"][0]["text"]) for i in items] == [  # type: ignore[index,typeddict-item]
        ("user", "Hello"),
        ("assistant", "Hi there!"),
    ]
    assert all(i["id"].startswith("msg_") for i in items)  # type: ignore[typeddict-item]


async def test_more_than_twenty_items_go_in_several_requests(
    server: Server, clients: Clients
) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    await session.add_items([said(f"m{i}") for i in range(45)])
    assert await texts(api, session.session_id) == [f"m{i}" for i in range(45)]


async def test_pop_item_removes_the_newest_from_the_server(
    server: Server, clients: Clients
) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    assert await session.pop_item() is None  # an empty session
    await session.add_items([said("older"), said("Latest message", "assistant")])
    popped = await session.pop_item()
    assert popped is not None and popped["content"][0]["text"] == "Latest message"  # type: ignore[index,typeddict-item]
    with pytest.raises(openai.NotFoundError):
        await api.conversations.items.retrieve(popped["id"], conversation_id=session.session_id)  # type: ignore[typeddict-item]
    assert await texts(api, session.session_id) == ["older"]


async def test_clear_session_deletes_the_conversation(server: Server, clients: Clients) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    await session.add_items([said("Hello")])
    conv = session.session_id
    await session.clear_session()
    assert conv not in conversations_of(server)
    with pytest.raises(ValueError, match="not yet available"):
        session.session_id  # noqa: B018
    await session.add_items([said("again")])  # a new conversation
    assert session.session_id != conv and await texts(api, session.session_id) == ["again"]


async def test_sessions_with_different_conversations_are_apart(
    server: Server, clients: Clients
) -> None:
    api = clients()
    one, two = (OpenAIConversationsSession(openai_client=api) for _ in range(2))
    await one.add_items([said("Session 1 message")])
    await two.add_items([said("Session 2 message")])
    assert one.session_id != two.session_id
    assert await texts(api, one.session_id) == ["Session 1 message"]
    assert await texts(api, two.session_id) == ["Session 2 message"]


async def test_a_large_limit_pages_past_the_servers_page_size(
    server: Server, clients: Clients
) -> None:
    api = clients()
    session = OpenAIConversationsSession(openai_client=api)
    await session.add_items([said(str(i)) for i in range(200)])
    items = await session.get_items(limit=150)
    assert [i["content"][0]["text"] for i in items] == [str(i) for i in range(50, 200)]  # type: ignore[index,typeddict-item]
    limited = OpenAIConversationsSession(
        conversation_id=session.session_id,
        openai_client=api,
        session_settings=SessionSettings(limit=5),
    )
    got = [i["content"][0]["text"] for i in await limited.get_items()]  # type: ignore[index,typeddict-item]
    assert got == [str(i) for i in range(195, 200)]


# -- failures the server gives -----------------------------------------------------------


async def test_failures_reach_the_caller_and_the_session_recovers(
    server: Server, clients: Clients
) -> None:
    stranger = clients(None)
    session = OpenAIConversationsSession(openai_client=stranger)
    with pytest.raises(openai.AuthenticationError):
        await session.add_items([said("Hello")])
    session._openai_client = clients()  # the token fixed: the next call starts it
    await session.add_items([said("Hello")])
    assert session.session_id.startswith("conv_")
    with pytest.raises(openai.BadRequestError):
        await session.add_items([{**said("bad"), "id": "a\x00b"}])  # type: ignore[typeddict-unknown-key]
    missing = OpenAIConversationsSession(conversation_id="conv_missing", openai_client=stranger)
    with pytest.raises(openai.AuthenticationError):
        await missing.clear_session()
    theirs = OpenAIConversationsSession(
        conversation_id=session.session_id, openai_client=clients("bob")
    )
    with pytest.raises(openai.NotFoundError):
        await theirs.get_items()
    with pytest.raises(openai.NotFoundError):
        await theirs.clear_session()
    assert session.session_id in conversations_of(server)


# -- with the Runner ---------------------------------------------------------------------


async def test_the_runner_keeps_history_across_runs(server: Server, clients: Clients) -> None:
    model = ScriptedModel([[assistant_message("San Francisco")], [assistant_message("California")]])
    agent = Agent(name="test", model=model)
    session = OpenAIConversationsSession(openai_client=clients())
    first = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    assert first.final_output == "San Francisco"
    second = await Runner.run(agent, "What state is it in?", session=session)
    assert second.final_output == "California"
    seen = [str(item.get("content", "")) for item in model.calls[1].input]  # type: ignore[union-attr]
    assert any("Golden Gate Bridge" in text for text in seen)
    assert any("San Francisco" in text for text in seen)
    assert len(await session.get_items()) == 4
