"""The entry point this package registers on convostore stores (``convostore.views``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convostore import AsyncConversationStore, ConversationStore

from .session import ConvostoreSession


def session_factory(
    store: ConversationStore | AsyncConversationStore,
) -> Callable[..., ConvostoreSession]:
    """``store.openai_session(conversation_id, *, max_items=None, **options)``."""

    def openai_session(
        conversation_id: str, *, max_items: int | None = None, **options: Any
    ) -> ConvostoreSession:
        """An Agents SDK ``Session`` over the conversation ``conversation_id``."""
        return ConvostoreSession(conversation_id, store=store, max_items=max_items, **options)

    return openai_session
