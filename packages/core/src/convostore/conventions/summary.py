"""Conversation summaries, by the reference's convention: ``summary`` and ``summarizedUntil``
(the id of the last message folded in) in the conversation's metadata.

The store never calls a model: ``fold_summary`` takes your summarizer, a callable
``(previous_summary, new_messages) -> new_summary``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..async_store import AsyncConversationStore
from ..models import ConversationMeta, Message
from ..store import ConversationStore
from ..threads import run_in_thread
from . import SUMMARY_KEY, UNTIL_KEY

_PAGE = 100

Summarizer = Callable[[str | None, list[Message]], str]
AsyncSummarizer = Callable[[str | None, list[Message]], str | Awaitable[str]]


@dataclass(frozen=True)
class PromptContext:
    """What a prompt is assembled from: the summary, then the messages it does not cover."""

    summary: str | None
    messages: list[Message]


def _state(meta: ConversationMeta | None) -> tuple[str | None, str | None]:
    metadata: dict[str, Any] = (meta.metadata if meta else None) or {}
    return metadata.get(SUMMARY_KEY), metadata.get(UNTIL_KEY)


def _unsummarized(
    store: ConversationStore, conversation_id: str, until: str | None
) -> list[Message]:
    """Every message after ``until`` (all of them if None or no longer stored), oldest first."""
    if (
        until is not None
        and store.get_message(conversation_id=conversation_id, message_id=until) is None
    ):
        until = None
    messages: list[Message] = []
    while True:
        page = store.get_messages(conversation_id=conversation_id, limit=_PAGE, after=until)
        messages += page
        if len(page) < _PAGE:
            return messages
        until = page[-1].message_id


def prompt_context(
    store: ConversationStore, *, conversation_id: str, max_messages: int = 100
) -> PromptContext:
    """The summary and the newest ``max_messages`` messages after ``summarizedUntil``."""
    summary, until = _state(store.get_conversation(conversation_id=conversation_id))
    messages = _unsummarized(store, conversation_id, until)
    return PromptContext(summary, messages[-max_messages:] if max_messages > 0 else [])


def _to_fold(
    store: ConversationStore, conversation_id: str, keep_last: int
) -> tuple[str | None, list[Message]]:
    summary, until = _state(store.get_conversation(conversation_id=conversation_id))
    messages = _unsummarized(store, conversation_id, until)
    return summary, messages[: max(len(messages) - keep_last, 0)]


def _write(
    store: ConversationStore, conversation_id: str, summary: str, last: Message
) -> ConversationMeta:
    return store.update_conversation(
        conversation_id=conversation_id,
        metadata={SUMMARY_KEY: summary, UNTIL_KEY: last.message_id},
    )


def fold_summary(
    store: ConversationStore, *, conversation_id: str, summarize: Summarizer, keep_last: int = 20
) -> ConversationMeta | None:
    """Fold every message but the newest ``keep_last`` into the summary; None if none was new."""
    previous, new = _to_fold(store, conversation_id, keep_last)
    if not new:
        return None
    return _write(store, conversation_id, summarize(previous, new), new[-1])


async def aprompt_context(
    store: AsyncConversationStore, *, conversation_id: str, max_messages: int = 100
) -> PromptContext:
    """``prompt_context`` for an ``AsyncConversationStore``."""
    return await run_in_thread(
        lambda: prompt_context(
            store.sync, conversation_id=conversation_id, max_messages=max_messages
        )
    )


async def afold_summary(
    store: AsyncConversationStore,
    *,
    conversation_id: str,
    summarize: AsyncSummarizer,
    keep_last: int = 20,
) -> ConversationMeta | None:
    """``fold_summary`` for an ``AsyncConversationStore``; ``summarize`` may be async."""
    previous, new = await run_in_thread(lambda: _to_fold(store.sync, conversation_id, keep_last))
    if not new:
        return None
    result = summarize(previous, new)
    text = await result if inspect.isawaitable(result) else result
    return await run_in_thread(lambda: _write(store.sync, conversation_id, text, new[-1]))
