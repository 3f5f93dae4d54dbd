"""Conversation titles, by the convention of Mastra-style apps: ``title`` in the conversation's
metadata, made once from the first exchange by a generator you pass (the store never calls a
model)."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from ..async_store import AsyncConversationStore
from ..errors import MemoryValidationError
from ..models import ConversationMeta, Message
from ..store import ConversationStore
from ..threads import run_in_thread
from . import TITLE_KEY

TitleGenerator = Callable[[list[Message]], str]
AsyncTitleGenerator = Callable[[list[Message]], str | Awaitable[str]]

_FIRST_EXCHANGE = 20  # messages read to find the first user turn and the reply to it

# Striped, so memory stays bounded: two conversations may share a stripe (and wait in turn).
_stripes = [threading.Lock() for _ in range(64)]
_inflight: dict[tuple[int, str, object], anyio.Event] = {}


def _title(meta: ConversationMeta | None) -> str | None:
    title = ((meta.metadata if meta else None) or {}).get(TITLE_KEY)
    return title if isinstance(title, str) and title else None


def first_exchange(messages: list[Message]) -> list[Message]:
    """The first user message and what answers it, up to the first assistant message after it
    (system messages before it included); ``[]`` if there is no user message."""
    for start, message in enumerate(messages):
        if message.role == "user":
            for end in range(start + 1, len(messages)):
                if messages[end].role == "assistant":
                    return messages[: end + 1]
            return messages
    return []


def _checked(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise MemoryValidationError(
            f"generate must return a non-empty str, got {text!r:.60}", argument="generate"
        )
    return text


def _store_title(
    store: ConversationStore, conversation_id: str, text: str, user_id: str | None
) -> str | None:
    meta = store.update_conversation(
        conversation_id=conversation_id,
        metadata={TITLE_KEY: text},
        user_id=user_id,
        if_missing=True,
    )
    return _title(meta)


def _lock(store: ConversationStore, conversation_id: str) -> threading.Lock:
    return _stripes[hash((id(store.backend), conversation_id)) % len(_stripes)]


def ensure_title(
    store: ConversationStore,
    *,
    conversation_id: str,
    generate: TitleGenerator,
    user_id: str | None = None,
) -> str | None:
    """The conversation's title; if it has none yet, ``generate(first_exchange)`` makes one,
    which is stored only if no title was set meanwhile (the atomic merge with ``if_missing``),
    and the title that won is returned. None while the conversation has no user message.
    Concurrent calls in one process call ``generate`` once; across processes each may call
    it, and one title is kept."""
    meta = store.get_conversation(conversation_id=conversation_id, user_id=user_id)
    if (found := _title(meta)) is not None or meta is None:
        return found
    with _lock(store, conversation_id):
        meta = store.get_conversation(conversation_id=conversation_id, user_id=user_id)
        if (found := _title(meta)) is not None:
            return found
        exchange = first_exchange(
            store.get_messages(
                conversation_id=conversation_id, limit=_FIRST_EXCHANGE, user_id=user_id
            )
        )
        if not exchange:
            return None
        return _store_title(store, conversation_id, _checked(generate(exchange)), user_id)


async def aensure_title(
    store: AsyncConversationStore,
    *,
    conversation_id: str,
    generate: AsyncTitleGenerator,
    user_id: str | None = None,
) -> str | None:
    """``ensure_title`` for an ``AsyncConversationStore``; ``generate`` may be async.
    Concurrent calls on one event loop call ``generate`` once."""
    sync = store.sync
    meta = await store.get_conversation(conversation_id=conversation_id, user_id=user_id)
    if (found := _title(meta)) is not None or meta is None:
        return found
    key = (id(sync.backend), conversation_id, anyio.lowlevel.current_token())
    while (running := _inflight.get(key)) is not None:
        await running.wait()
        meta = await store.get_conversation(conversation_id=conversation_id, user_id=user_id)
        if (found := _title(meta)) is not None:
            return found
    done = _inflight[key] = anyio.Event()
    try:
        page = await store.get_messages(
            conversation_id=conversation_id, limit=_FIRST_EXCHANGE, user_id=user_id
        )
        exchange = first_exchange(page)
        if not exchange:
            return None
        made: Any = generate(exchange)
        text = _checked(await made if inspect.isawaitable(made) else made)
        return await run_in_thread(lambda: _store_title(sync, conversation_id, text, user_id))
    finally:
        del _inflight[key]
        done.set()
