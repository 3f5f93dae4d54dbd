"""The writer x reader matrix (tests/matrix/readers.py) for the core API as the writer: a
conversation written with append_messages, tool calls in the Chat Completions shape, an image,
a title; every reader on SQLite and PostgreSQL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore, ensure_title

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix"))
from readers import READERS, Written, check

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
}
PICTURE = [
    {"type": "text", "text": "And this picture?"},
    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
]
MESSAGES: list[tuple[str, Any, dict[str, Any] | None]] = [
    ("system", "You are terse.", None),
    ("user", "Weather in Oslo?", None),
    ("assistant", "", {"tool_calls": [CALL]}),
    ("tool", "sunny", {"tool_call_id": "call_1"}),
    ("assistant", "It is sunny in Oslo.", None),
    ("user", PICTURE, None),
    ("assistant", "A cat.", None),
]


def written() -> Written:
    return Written(
        conversation_id="core-chat",
        user_id="alice",
        messages=MESSAGES,
        ids=[f"m{i}" for i in range(len(MESSAGES))],
        title="Weather in Oslo",
        system="You are terse.",
        anthropic=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}],
            },
            {"role": "assistant", "content": "It is sunny in Oslo."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "And this picture?"},
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://example.com/cat.png"},
                    },
                ],
            },
            {"role": "assistant", "content": "A cat."},
        ],
        openai=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny in Oslo."},
            {"role": "user", "content": PICTURE},
            {"role": "assistant", "content": "A cat."},
        ],
    )


@pytest.fixture
def store(shared_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(shared_url) as s:
        s.append_message(conversation_id="other", role="user", content="x", user_id="bob")
        s.append_messages(
            conversation_id="core-chat",
            user_id="alice",
            messages=[
                {"role": role, "content": content, "metadata": metadata, "message_id": f"m{i}"}  # type: ignore[typeddict-item]
                for i, (role, content, metadata) in enumerate(MESSAGES)
            ],
        )
        ensure_title(s, conversation_id="core-chat", generate=lambda m: "Weather in Oslo")
        s.append_message(conversation_id="newest", role="user", content="y")
        yield s


@pytest.mark.parametrize("reader", READERS)
def test_core_api_writer(store: ConversationStore, reader: str) -> None:
    check(store, written(), reader)
