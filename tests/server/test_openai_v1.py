"""The OpenAI Conversations API under /v1, driven by the official `openai` client (sync and
async) and by the Agents SDK's `OpenAIConversationsSession`, against a live server on SQLite
and PostgreSQL; what it writes read back by the store, the adapter's session and /conversations."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from agents import Agent, Runner, function_tool
from agents.memory import OpenAIConversationsSession
from agents.testing import ScriptedModel, assistant_message, function_call
from convostore import ConversationStore
from convostore_openai import ConvostoreSession
from openai import AsyncOpenAI, OpenAI
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary
from served import Server


def client(server: Server, who: str | None = "alice", **options: Any) -> OpenAI:
    key = "not-a-token" if who is None else server.tokens[who]
    options.setdefault("max_retries", 0)
    return OpenAI(base_url=f"{server.base}/v1", api_key=key, **options)


def async_client(server: Server, who: str = "alice", **options: Any) -> AsyncOpenAI:
    options.setdefault("max_retries", 0)
    return AsyncOpenAI(base_url=f"{server.base}/v1", api_key=server.tokens[who], **options)


@contextlib.contextmanager
def store_of(server: Server) -> Iterator[ConversationStore]:
    """The server's database, opened in this process: a second writer beside the server."""
    store = ConversationStore(server.store_url)
    try:
        yield store
    finally:
        store.close()


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def sent_fields(got: Any, sent: dict[str, Any]) -> dict[str, Any]:
    """What the server answered for the fields an item was sent with."""
    dumped = got.model_dump(exclude_unset=True) if not isinstance(got, dict) else got
    return {k: dumped[k] for k in sent}


TOOL_ROUND: list[dict[str, Any]] = [
    user("weather in Paris?"),
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "need the weather"}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 22C"},
    {
        "type": "message",
        "id": "msg_out_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
    },
]


# -- conversations ------------------------------------------------------------------------


def test_a_conversation_is_created_read_updated_and_deleted(server: Server) -> None:
    api = client(server)
    made = api.conversations.create(items=TOOL_ROUND, metadata={"topic": "weather"})
    assert made.object == "conversation" and made.id.startswith("conv_")
    assert made.metadata == {"topic": "weather"}
    assert api.conversations.retrieve(made.id) == made

    updated = api.conversations.update(made.id, metadata={"lang": "fr"})
    assert updated.metadata == {"topic": "weather", "lang": "fr"}  # merged
    assert updated.created_at == made.created_at

    listed = api.conversations.items.list(made.id, order="asc")
    assert [sent_fields(i, s) for i, s in zip(listed.data, TOOL_ROUND, strict=True)] == TOOL_ROUND
    assert [i.type for i in listed.data] == [i["type"] for i in TOOL_ROUND]

    deleted = api.conversations.delete(made.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (made.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError):
        api.conversations.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        api.conversations.delete(made.id)


def test_an_empty_conversation_and_its_metadata(server: Server) -> None:
    api = client(server)
    made = api.conversations.create()
    assert made.metadata == {} and made.id.startswith("conv_")
    page = api.conversations.items.list(made.id)
    assert (page.data, page.has_more, page.last_id) == ([], False, None)
    assert list(api.conversations.items.list(made.id)) == []


# -- items --------------------------------------------------------------------------------


def test_items_are_created_retrieved_and_deleted(server: Server) -> None:
    api = client(server)
    conv = api.conversations.create().id
    created = api.conversations.items.create(conv, items=TOOL_ROUND)
    assert created.object == "list" and created.has_more is False
    ids = [i.id for i in created.data]
    assert (created.first_id, created.last_id) == (ids[0], ids[-1])
    # Items sent with an id keep it; the others get a msg_ id.
    assert ids[1:3] == ["rs_1", "fc_1"] and ids[4] == "msg_out_1"
    assert ids[0].startswith("msg_") and ids[3].startswith("msg_")
    for got, sent in zip(created.data, TOOL_ROUND, strict=True):
        assert sent_fields(got, sent) == sent
        assert api.conversations.items.retrieve(got.id, conversation_id=conv) == got

    # `include` is taken and changes nothing: an item is answered whole.
    everything = ["reasoning.encrypted_content", "message.output_text.logprobs"]
    included = api.conversations.items.list(conv, include=everything)
    assert included.data == api.conversations.items.list(conv).data
    assert (
        api.conversations.items.retrieve("fc_1", conversation_id=conv, include=everything)
        == (created.data[2])
    )
    answered = api.conversations.items.delete("fc_1", conversation_id=conv)
    assert answered.object == "conversation" and answered.id == conv
    with pytest.raises(openai.NotFoundError):
        api.conversations.items.retrieve("fc_1", conversation_id=conv)
    with pytest.raises(openai.NotFoundError):
        api.conversations.items.delete("fc_1", conversation_id=conv)
    left = [i.id for i in api.conversations.items.list(conv, order="asc")]
    assert left == [ids[0], "rs_1", ids[3], "msg_out_1"]


def test_an_item_sent_again_with_its_id_is_stored_once(server: Server) -> None:
    """The client's retry of a create whose answer was lost stores nothing twice."""
    api = client(server)
    conv = api.conversations.create().id
    first = api.conversations.items.create(conv, items=TOOL_ROUND[1:3])
    again = api.conversations.items.create(conv, items=TOOL_ROUND[1:3])
    assert again == first
    assert [i.id for i in api.conversations.items.list(conv)] == ["fc_1", "rs_1"]
    other = {**TOOL_ROUND[2], "arguments": '{"city": "Rome"}'}
    retrying = client(server, max_retries=2)  # the client's default: it retries a 409 ...
    with pytest.raises(openai.ConflictError) as refused:
        retrying.conversations.items.create(conv, items=[other])
    assert refused.value.code == "message_id_conflict"
    assert refused.value.response.headers["x-should-retry"] == "false"  # ... unless told
    posts = f'"POST /v1/conversations/{conv}/items HTTP/1.1" 409'
    assert server.log_text().count(posts) == 1


def test_easy_input_messages_are_listed_as_the_hosted_api_lists_them(server: Server) -> None:
    api = client(server)
    conv = api.conversations.create(
        items=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    ).id
    got = [
        i.model_dump(exclude_unset=True) for i in api.conversations.items.list(conv, order="asc")
    ]
    for item in got:
        assert item.pop("id").startswith("msg_")
    assert got == [
        {
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_text", "text": "hi"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        },
    ]


@pytest.mark.anyio
async def test_paging_250_items_in_both_orders(server: Server) -> None:
    api = async_client(server)
    conv = (await api.conversations.create()).id
    sent = [user(f"m{i}") for i in range(250)]
    for start in range(0, 250, 20):
        await api.conversations.items.create(conv, items=sent[start : start + 20])
    texts = [f"m{i}" for i in range(250)]

    async def walk(order: str, limit: int | None) -> list[str]:
        extra = {} if limit is None else {"limit": limit}
        return [
            i.content[0].text  # type: ignore[union-attr]
            async for i in api.conversations.items.list(conv, order=order, **extra)  # type: ignore[arg-type]
        ]

    for limit in (None, 1, 7, 99, 100):
        assert await walk("asc", limit) == texts, limit
        assert await walk("desc", limit) == texts[::-1], limit

    page = await api.conversations.items.list(conv, order="asc", limit=100)
    assert page.has_more is True and len(page.data) == 100
    assert (page.first_id, page.last_id) == (page.data[0].id, page.data[-1].id)
    last = await api.conversations.items.list(conv, order="asc", limit=50, after=page.last_id)
    assert [i.content[0].text for i in last.data] == texts[100:150]  # type: ignore[union-attr]
    tail = await api.conversations.items.list(conv, order="desc", limit=100, after=page.data[49].id)
    assert [i.content[0].text for i in tail.data] == texts[48::-1]  # type: ignore[union-attr]
    assert tail.has_more is False
    await api.close()


# -- errors -------------------------------------------------------------------------------


def test_errors_are_the_hosted_apis(server: Server) -> None:
    alice, bob = client(server), client(server, "bob")
    conv = alice.conversations.create(items=[user("mine")]).id
    item = alice.conversations.items.list(conv).data[0].id

    with pytest.raises(openai.NotFoundError) as missing:
        alice.conversations.retrieve("conv_missing")
    assert missing.value.body == {
        "message": "conversation 'conv_missing' not found",
        "type": "invalid_request_error",
        "param": None,
        "code": "not_found",
    }
    # Another user's conversation answers what a missing one does, for every call.
    for call in (
        lambda: bob.conversations.retrieve(conv),
        lambda: bob.conversations.update(conv, metadata={"x": "y"}),
        lambda: bob.conversations.delete(conv),
        lambda: bob.conversations.items.list(conv),
        lambda: bob.conversations.items.create(conv, items=[user("theirs")]),
        lambda: bob.conversations.items.retrieve(item, conversation_id=conv),
        lambda: bob.conversations.items.delete(item, conversation_id=conv),
    ):
        with pytest.raises(openai.NotFoundError) as hidden:
            call()
        assert hidden.value.body["message"] == f"conversation {conv!r} not found"
    assert [i.id for i in alice.conversations.items.list(conv)] == [item]

    for limit in (0, 101):
        with pytest.raises(openai.BadRequestError) as bad:
            alice.conversations.items.list(conv, limit=limit)
        assert bad.value.param == "limit" and bad.value.code == "invalid_argument"
    with pytest.raises(openai.BadRequestError) as bad:
        alice.conversations.items.list(conv, order="sideways")  # type: ignore[arg-type]
    assert bad.value.param == "order" and bad.value.code == "invalid_request"

    with pytest.raises(openai.AuthenticationError) as unauthenticated:
        client(server, None).conversations.retrieve(conv)
    assert unauthenticated.value.type == "authentication_error"
    with pytest.raises(openai.PermissionDeniedError):
        alice.conversations.retrieve(conv, extra_query={"userId": "bob"})


# -- one data model -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_v1_items_are_the_sessions_items_and_back(server: Server) -> None:
    api = client(server)
    conv = api.conversations.create(items=TOOL_ROUND).id
    with store_of(server) as store:
        session = ConvostoreSession(conv, store=store, user_id="alice")
        assert await session.get_items() == TOOL_ROUND  # as sent, item for item
        later = [{"role": "user", "content": "thanks"}, TOOL_ROUND[4] | {"id": "msg_out_2"}]
        await session.add_items(later)
        messages = store.get_messages(conversation_id=conv, limit=100, user_id="alice")
    listed = list(api.conversations.items.list(conv, order="asc"))
    assert [i.id for i in listed] == [m.message_id for m in messages]
    assert listed[5].content[0].text == "thanks"  # type: ignore[union-attr]
    assert sent_fields(listed[6], TOOL_ROUND[4]) == {**TOOL_ROUND[4], "id": messages[6].message_id}
    body = server.client().get(f"/conversations/{conv}/messages", params={"limit": 100}).json()
    assert [m["content"] for m in body["items"]] == [*TOOL_ROUND, *later]
    assert [m["role"] for m in body["items"]] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 22C in {city}"


def _reasoning(item_id: str) -> ResponseReasoningItem:
    summary = [Summary(text="need the weather", type="summary_text")]
    return ResponseReasoningItem(id=item_id, type="reasoning", summary=summary)


@pytest.mark.anyio
async def test_the_agents_sdk_conversations_session_runs_on_the_server(server: Server) -> None:
    api = async_client(server)
    model = ScriptedModel(
        [
            [
                _reasoning("rs_1"),
                function_call("get_weather", {"city": "Paris"}, call_id="call_1", item_id="fc_1"),
            ],
            [assistant_message("It is sunny.", item_id="msg_a1")],
            [assistant_message("Bye!", item_id="msg_a2")],
        ]
    )
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    session = OpenAIConversationsSession(openai_client=api)
    first = await Runner.run(agent, "Weather in Paris?", session=session)
    assert first.final_output == "It is sunny."
    second = await Runner.run(agent, "Thanks!", session=session)
    assert second.final_output == "Bye!"
    # The second turn's model call saw the first turn, read back through /v1.
    history = await session.get_items()
    assert [i.get("type") for i in history] == [
        "message", "reasoning", "function_call", "function_call_output", "message",
        "message", "message",
    ]  # fmt: skip

    def without_id(items: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in i.items() if k != "id"} for i in items]

    assert without_id(model.calls[2].input[:5]) == without_id(history[:5])
    conv = session.session_id

    with store_of(server) as store:
        messages = store.get_messages(conversation_id=conv, limit=100, user_id="alice")
        stored = await ConvostoreSession(conv, store=store, user_id="alice").get_items()
    assert [h["id"] for h in history] == [m.message_id for m in messages]
    assert stored[0] == {"content": "Weather in Paris?", "role": "user"}
    assert stored[1]["id"] == "rs_1" and stored[2]["call_id"] == "call_1"
    assert stored[3]["call_id"] == "call_1" and stored[3]["output"] == "Sunny, 22C in Paris"
    http = server.client().get(f"/conversations/{conv}/messages", params={"limit": 100}).json()
    assert [m["content"] for m in http["items"]] == stored
    assert [m["messageId"] for m in http["items"]] == [h["id"] for h in history]

    popped = await session.pop_item()
    assert popped == history[-1] and popped["content"][0]["text"] == "Bye!"
    assert len(await session.get_items()) == 6
    await session.clear_session()
    with pytest.raises(openai.NotFoundError):
        await api.conversations.retrieve(conv)
    await api.close()


def test_sync_and_async_clients_agree(server: Server) -> None:
    conv = client(server).conversations.create(items=TOOL_ROUND[:2]).id

    async def read() -> list[Any]:
        async with async_client(server) as api:
            return [i async for i in api.conversations.items.list(conv)]

    assert asyncio.run(read()) == list(client(server).conversations.items.list(conv))


@pytest.mark.anyio
async def test_a_run_on_the_convostore_session_goes_on_through_v1(server: Server) -> None:
    """A conversation an agent ran on ``ConvostoreSession`` (the store, in its process) is
    listed by /v1 item for item, and an ``OpenAIConversationsSession`` on that id runs the
    next turn, which the store's session then reads."""
    model = ScriptedModel(
        [
            [
                _reasoning("rs_1"),
                function_call("get_weather", {"city": "Paris"}, call_id="call_1", item_id="fc_1"),
            ],
            [assistant_message("It is sunny.", item_id="msg_a1")],
            [assistant_message("Bye!", item_id="msg_a2")],
        ]
    )
    agent = Agent(name="assistant", model=model, tools=[get_weather])
    conv = f"conv_run_{uuid.uuid4().hex}"
    with store_of(server) as store:
        local = ConvostoreSession(conv, store=store, user_id="alice")
        await Runner.run(agent, "Weather in Paris?", session=local)
        written = await local.get_items()
        ids = [m.message_id for m in store.get_messages(conversation_id=conv, user_id="alice")]

        api = async_client(server)
        listed = [i async for i in api.conversations.items.list(conv, order="asc")]
        assert [i.type for i in listed] == [
            "message", "reasoning", "function_call", "function_call_output", "message",
        ]  # fmt: skip
        assert [i.id for i in listed] == ids
        for got, item in zip(listed, written, strict=True):
            dumped = got.model_dump(exclude_unset=True)
            if item.get("type") in (None, "message"):
                assert dumped["role"] == item["role"]
            else:
                assert {**item, "id": got.id} == dumped

        remote = OpenAIConversationsSession(conversation_id=conv, openai_client=api)
        second = await Runner.run(agent, "Thanks!", session=remote)
        assert second.final_output == "Bye!"
        assert len(model.calls[2].input) == 6  # the first turn, read through /v1, and "Thanks!"
        after = await local.get_items()
        assert after[:5] == written and len(after) == 7
        assert after[5]["content"] == "Thanks!"
        await api.close()
