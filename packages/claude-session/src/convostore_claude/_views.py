"""The entry point this package registers on convostore stores (``convostore.views``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convostore import AsyncConversationStore, ConversationStore

from .store import ConvostoreSessionStore


def session_store_factory(
    store: ConversationStore | AsyncConversationStore,
) -> Callable[..., ConvostoreSessionStore]:
    """``store.claude_session_store(**options)``."""

    def claude_session_store(**options: Any) -> ConvostoreSessionStore:
        """A Claude Agent SDK ``SessionStore`` on this store (``tenant=``, ``user_id=``...)."""
        return ConvostoreSessionStore(store=store, **options)

    return claude_session_store
