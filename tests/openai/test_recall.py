"""search_history_tool in a real Runner.run: a scripted model calls the tool and reads the hits
of its user's past sessions (another user's never), pages with `after`, and gets a bad query
back as an answer it can correct."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError
from convostore_openai import ConvostoreSession, search_history_tool

pytestmark = pytest.mark.anyio


async def say(store: AsyncConversationStore, session_id: str, user: str, text: str) -> None:
    """One past turn of ``user`` in the session ``session_id``, through a real run."""
    session = ConvostoreSession(session_id, store=store, user_id=user)
    model = ScriptedModel([[assistant_message("Noted.")]])
    await Runner.run(Agent(name="assistant", model=model), text, session=session)


def tool_outputs(model: ScriptedModel) -> list[str]:
    """The outputs of the function calls the model was given, in order."""
    last: list[Any] = list(model.calls[-1].input)
    return [str(i["output"]) for i in last if i.get("type") == "function_call_output"]


async def ask(store: AsyncConversationStore, calls: list[dict[str, Any]], **tool: Any) -> Any:
    """A run whose scripted model makes ``calls`` (one a step) then answers; its model."""
    steps: list[list[Any]] = [
        [function_call("search_history", args, call_id=f"call_{n}")] for n, args in enumerate(calls)
    ]
    model = ScriptedModel([*steps, [assistant_message("Done.")]])
    options = {"user_id": "alice", **tool}
    agent = Agent(name="assistant", model=model, tools=[search_history_tool(store, **options)])
    result = await Runner.run(agent, "What was my order number?")
    assert result.final_output == "Done."
    return model


async def test_the_agent_finds_its_users_past_session_and_not_another_users(
    store: AsyncConversationStore,
) -> None:
    await say(store, "support-17", "alice", "Hi, my order number is A-7731, it never came.")
    await say(store, "chat-2", "alice", "Unrelated: the weather is nice.")
    await say(store, "bob-support", "bob", "My order number is B-9999.")
    model = await ask(store, [{"query": "ORDER number"}])
    [answer] = tool_outputs(model)
    lines = answer.splitlines()
    assert lines[0] == '1 messages match "ORDER number", newest first:'
    assert lines[1].startswith("1. conversation support-17, ")
    # (an OpenAI item's content is the item: its text, then its other strings, as "user")
    assert " UTC, user: Hi, my order number is A-7731, it never came." in lines[1]
    assert "B-9999" not in answer and "bob" not in answer
    tool = model.calls[0].tools[0]
    assert tool.name == "search_history"
    assert set(tool.params_json_schema["properties"]) == {"query", "after"}


async def test_pages_with_after_and_a_bad_query_is_an_answer(
    store: AsyncConversationStore,
) -> None:
    for n in range(3):
        await say(store, f"s{n}", "alice", f"note {n}: the door code is 4{n}{n}")
    model = await ask(store, [{"query": "door code"}], limit=2)
    [first] = tool_outputs(model)
    assert [line.split(",")[0] for line in first.splitlines()[1:3]] == [
        "1. conversation s2",
        "2. conversation s1",
    ]
    after = first.splitlines()[-1].split('after="')[1].rstrip('".')
    model = await ask(
        store,
        [
            {"query": "door code", "after": after},
            {"query": '""'},
            {"query": "x", "after": "forged"},
        ],
        limit=2,
    )
    second, empty, forged = tool_outputs(model)
    assert second.splitlines()[1].startswith("1. conversation s0, ")
    assert "More matches" not in second
    assert empty == "Error: query has no terms (it is empty or blank)"
    assert forged.startswith("Error: after: ") and "is not a cursor" in forged
    model = await ask(store, [{"query": "no such thing"}], conversation_id="s1")
    assert tool_outputs(model) == ['No message matches "no such thing".']


async def test_the_tool_is_bound_to_a_user_and_checks_its_arguments(
    store: AsyncConversationStore, backend_url: str
) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        search_history_tool(store, user_id="")
    assert caught.value.argument == "user_id"
    with pytest.raises(MemoryValidationError) as caught:
        search_history_tool(store, user_id="alice", limit=101)
    assert caught.value.argument == "limit"
    with pytest.raises(MemoryValidationError) as caught:
        search_history_tool(backend_url, user_id="alice")  # type: ignore[arg-type]
    assert caught.value.argument == "store"
    await say(store, "s1", "alice", "a sync store answers the same: kiwi")
    model = await ask(store, [{"query": "kiwi"}], user_id="alice")
    sync_store: ConversationStore = store.sync
    model_sync = await ask(sync_store, [{"query": "kiwi"}])  # type: ignore[arg-type]
    assert tool_outputs(model) == tool_outputs(model_sync)
