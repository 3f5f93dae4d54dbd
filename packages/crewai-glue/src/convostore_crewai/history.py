"""Turn a stored conversation into what continues it in CrewAI."""

from __future__ import annotations

import json
from typing import Any

from convostore import Message, to_openai_input
from convostore.spi import check_optional_int

from ._common import StoreLike, open_store

CHAT_MESSAGES_KEY = "crew_chat_messages"
"""The kickoff input CrewAI appends to every task as the conversation history."""


def _text(content: Any) -> str:
    """The text of stored content: a string as is, text blocks joined, anything else as JSON."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else [content]
    texts = [
        str(b.get("text"))
        for b in blocks
        if isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text")
    ]
    texts += [b for b in blocks if isinstance(b, str)]
    if texts:
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, default=str)


def _is_error_note(message: Message) -> bool:
    return (message.metadata or {}).get("crewai") == "error"


def history_messages(
    store: StoreLike,
    conversation_id: str,
    *,
    last: int | None = 20,
    max_chars: int | None = None,
) -> list[dict[str, str]]:
    """The conversation's user and assistant turns as ``{"role", "content"}`` text, oldest first.

    Tool calls, tool results and failure notes are left out. ``last`` keeps the newest
    messages read (None reads all); ``max_chars`` then drops the oldest turns until the
    contents fit.
    """
    check_optional_int("max_chars", max_chars, minimum=1)
    sync, owned = open_store(store)
    try:
        stored = sync.get_history(conversation_id=conversation_id, last=last)
    finally:
        if owned:
            sync.close()
    turns = [
        {"role": m.role, "content": _text(m.content)}
        for m in stored
        if m.role in ("user", "assistant") and not _is_error_note(m)
    ]
    turns = [t for t in turns if t["content"]]
    if max_chars is not None:
        total = sum(len(t["content"]) for t in turns)
        while turns and total > max_chars:
            total -= len(turns.pop(0)["content"])
    return turns


def crew_history_inputs(
    store: StoreLike,
    conversation_id: str,
    *,
    last: int | None = 20,
    max_chars: int | None = None,
) -> dict[str, str]:
    """Kickoff inputs that show a crew the conversation so far.

    Merge the result into ``Crew.kickoff(inputs=...)``: CrewAI appends the turns to every
    task's description as the conversation history. An empty conversation gives ``{}``.
    """
    turns = history_messages(store, conversation_id, last=last, max_chars=max_chars)
    return {CHAT_MESSAGES_KEY: json.dumps(turns, ensure_ascii=False)} if turns else {}


def agent_messages(
    store: StoreLike,
    conversation_id: str,
    *,
    user_message: str | None = None,
    last: int | None = None,
    include_tools: bool = True,
) -> list[dict[str, Any]]:
    """Messages for ``Agent.kickoff(messages=...)``: the stored conversation, then
    ``user_message`` (the agent answers the last user message).

    Tool calls and their results are kept in Chat Completions shape (unpaired ones are
    dropped) unless ``include_tools`` is False; failure notes are left out. Consecutive
    assistant turns (one per task) are merged into one, their texts joined by a blank line.
    """
    sync, owned = open_store(store)
    try:
        stored = sync.get_history(conversation_id=conversation_id, last=last)
    finally:
        if owned:
            sync.close()
    kept = [m for m in stored if not _is_error_note(m)]
    messages = to_openai_input(kept)
    for m in messages:
        # Consecutive turns (two agents' outputs) arrive merged as text parts: CrewAI's
        # prompts take one string.
        content = m.get("content")
        if isinstance(content, list) and all(p.get("type") == "text" for p in content):
            m["content"] = "\n\n".join(str(p.get("text", "")) for p in content)
    if not include_tools:
        messages = [
            m
            for m in messages
            if m["role"] != "tool" and not (m.get("tool_calls") and not m.get("content"))
        ]
        for m in messages:
            m.pop("tool_calls", None)
    if user_message is not None:
        messages.append({"role": "user", "content": user_message})
    return messages
