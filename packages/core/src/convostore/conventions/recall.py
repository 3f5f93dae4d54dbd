"""Recall for agents: a search of one user's history answered as text a model reads (the body
of the adapters' ``search_history`` tools; the store never calls a model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import NamedTuple

from ..async_store import AsyncConversationStore
from ..errors import MemoryValidationError
from ..models import SearchResult
from ..store import ConversationStore
from ..validation import check_id, check_int, check_optional_id

SEARCH_HISTORY_NAME = "search_history"
SEARCH_HISTORY_DESCRIPTION = (
    "Search this user's past conversations for messages containing every term of the query"
    " (a term is a substring, case ignored; put a phrase in double quotes). Returns the newest"
    " matches first, each with its conversation, time, role and an excerpt. When there are more,"
    " the answer ends with an `after` value: pass it to get the next page."
)
SEARCH_HISTORY_QUERY_HELP = 'Terms to find, separated by spaces; "a phrase" in double quotes.'
SEARCH_HISTORY_AFTER_HELP = (
    "The `after` value a previous search_history answer ended with, for its next page."
)

_MODEL_ARGUMENTS = ("query", "after")  # the arguments a model writes: their errors are answers


class RecallBinding(NamedTuple):
    """What a ``search_history`` tool is bound to, its arguments checked (``bind_recall``)."""

    store: ConversationStore
    async_store: AsyncConversationStore
    user_id: str
    conversation_id: str | None
    limit: int

    def search(self, query: str, after: str | None = None) -> str:
        """``search_history`` with what the tool is bound to."""
        return search_history(
            self.store,
            query,
            user_id=self.user_id,
            conversation_id=self.conversation_id,
            limit=self.limit,
            after=after,
        )

    async def asearch(self, query: str, after: str | None = None) -> str:
        """``asearch_history`` with what the tool is bound to."""
        return await asearch_history(
            self.async_store,
            query,
            user_id=self.user_id,
            conversation_id=self.conversation_id,
            limit=self.limit,
            after=after,
        )


def bind_recall(
    store: object, *, user_id: object, conversation_id: object = None, limit: object = 10
) -> RecallBinding:
    """Check what an adapter's ``search_history_tool`` is given, when it is made: a store
    (either twin: both are handed back), the user, the conversation, the hits a call."""
    if isinstance(store, AsyncConversationStore):
        blocking, nonblocking = store.sync, store
    elif isinstance(store, ConversationStore):
        blocking, nonblocking = store, AsyncConversationStore(sync=store)
    else:
        raise MemoryValidationError(
            "store must be a ConversationStore or an AsyncConversationStore,"
            f" got {type(store).__name__}",
            argument="store",
        )
    limits = blocking.limits
    return RecallBinding(
        blocking,
        nonblocking,
        check_id("user_id", user_id, limits),
        check_optional_id("conversation_id", conversation_id, limits),
        check_int("limit", limit, minimum=1, maximum=limits.max_page_size),
    )


def _minute(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def recall_text(query: str, result: SearchResult) -> str:
    """``result`` as a model reads it: one line per hit (conversation, time, role, excerpt),
    newest first, then the ``after`` value of the next page if there is one."""
    shown = json.dumps(query, ensure_ascii=False)
    if not result.items:
        return f"No message matches {shown}."
    lines = [f"{len(result.items)} messages match {shown}, newest first:"]
    for n, hit in enumerate(result.items, 1):
        m = hit.message
        lines.append(
            f"{n}. conversation {hit.conversation_id}, {_minute(m.created_at)}, {m.role}:"
            f" {hit.snippet}"
        )
    if result.next_cursor is not None:
        lines.append(f'More matches: call {SEARCH_HISTORY_NAME} with after="{result.next_cursor}".')
    return "\n".join(lines)


def _check_user(user_id: object) -> None:
    if not isinstance(user_id, str):
        raise MemoryValidationError(
            "user_id must be a str: a recall is bound to one user's history", argument="user_id"
        )


def _refusal(exc: MemoryValidationError) -> str:
    if exc.argument not in _MODEL_ARGUMENTS:
        raise exc
    return f"Error: {exc}"


def search_history(
    store: ConversationStore,
    query: str,
    *,
    user_id: str,
    conversation_id: str | None = None,
    limit: int = 10,
    after: str | None = None,
) -> str:
    """``store.search_messages`` over ``user_id``'s conversations (or the one given), as text
    a model reads. A bad ``query`` or ``after`` (the model's arguments) is answered with an
    ``Error: ...`` line naming it; anything else raises."""
    _check_user(user_id)
    try:
        result = store.search_messages(
            query=query,
            user_id=user_id,
            conversation_id=conversation_id,
            limit=limit,
            after=after,
        )
    except MemoryValidationError as exc:
        return _refusal(exc)
    return recall_text(query, result)


async def asearch_history(
    store: AsyncConversationStore,
    query: str,
    *,
    user_id: str,
    conversation_id: str | None = None,
    limit: int = 10,
    after: str | None = None,
) -> str:
    """``search_history`` on an async store."""
    _check_user(user_id)
    try:
        result = await store.search_messages(
            query=query,
            user_id=user_id,
            conversation_id=conversation_id,
            limit=limit,
            after=after,
        )
    except MemoryValidationError as exc:
        return _refusal(exc)
    return recall_text(query, result)
