"""The writer x reader matrix (tests/matrix/readers.py) for the OpenAI Agents SDK as the
writer: a ConvostoreSession run by the real Runner (a scripted model: reasoning, a function
call and its output, answers); every reader on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, assistant_message
from convostore import AsyncConversationStore, ConversationStore
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, run_agent, tool_turn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix"))
from readers import READERS, Written, check


def answer(item_id: str, text: str) -> dict[str, Any]:
    """An assistant message item as the SDK stores it."""
    return {
        "id": item_id,
        "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    }


def written(db: ConversationStore) -> Written:
    async def run() -> None:
        session = ConvostoreSession(
            "oa-chat", store=AsyncConversationStore(sync=db), user_id="alice"
        )
        model = ScriptedModel(
            [*tool_turn(1, "Paris", "It is sunny."), [assistant_message("Bye!", item_id="m_bye")]]
        )
        agent = agent_for(model)
        await run_agent("run", agent, "What's the weather in Paris?", session=session)
        await run_agent("run", agent, "Thanks", session=session)

    asyncio.run(run())
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    return Written(
        conversation_id="oa-chat",
        user_id="alice",
        messages=[
            ("user", {"content": "What's the weather in Paris?", "role": "user"}, None),
            (
                "assistant",
                {
                    "id": "rs_1",
                    "summary": [{"text": "need the weather", "type": "summary_text"}],
                    "type": "reasoning",
                },
                None,
            ),
            (
                "assistant",
                {
                    "arguments": '{"city":"Paris"}',
                    "call_id": "call_1",
                    "name": "get_weather",
                    "type": "function_call",
                    "id": "fc_1",
                },
                None,
            ),
            (
                "tool",
                {
                    "call_id": "call_1",
                    "output": "Sunny, 22C in Paris",
                    "type": "function_call_output",
                },
                None,
            ),
            ("assistant", answer("msg_1", "It is sunny."), None),
            ("user", {"content": "Thanks", "role": "user"}, None),
            ("assistant", answer("m_bye", "Bye!"), None),
        ],
        anthropic=[
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": "Sunny, 22C in Paris",
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
            {"role": "user", "content": "Thanks"},
            {"role": "assistant", "content": [{"type": "text", "text": "Bye!"}]},
        ],
        openai=[
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 22C in Paris"},
            {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
            {"role": "user", "content": "Thanks"},
            {"role": "assistant", "content": [{"type": "text", "text": "Bye!"}]},
        ],
    )


@pytest.fixture
def db(shared_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="other", role="user", content="x", user_id="bob")
        yield store


@pytest.mark.parametrize("reader", READERS)
def test_openai_session_writer(db: ConversationStore, reader: str) -> None:
    what = written(db)
    db.append_message(conversation_id="newest", role="user", content="y")
    check(db, what, reader)
