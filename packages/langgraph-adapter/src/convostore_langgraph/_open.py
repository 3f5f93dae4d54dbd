"""Turn what a caller passes (a store, an async store, a URL or nothing) into a core store."""

from __future__ import annotations

from convostore import AsyncConversationStore, ConversationStore

StoreLike = ConversationStore | AsyncConversationStore | str | None


def open_store(store: StoreLike) -> tuple[ConversationStore, bool]:
    """The blocking store to use, and whether we opened it (and so must close it)."""
    if isinstance(store, ConversationStore):
        return store, False
    if isinstance(store, AsyncConversationStore):
        return store.sync, False
    if store is None or isinstance(store, str):
        return ConversationStore(store), True
    raise TypeError(
        "store must be a ConversationStore, an AsyncConversationStore or a URL string,"
        f" got {type(store).__name__}"
    )
