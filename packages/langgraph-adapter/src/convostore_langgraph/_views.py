"""The entry points this package registers on convostore stores (``convostore.views``)."""

from __future__ import annotations

from convostore import AsyncConversationStore, ConversationStore

from .saver import ConvostoreSaver
from .store import ConvostoreStore


def checkpointer(store: ConversationStore | AsyncConversationStore) -> ConvostoreSaver:
    """``store.langgraph_checkpointer``: one saver per store (an async store shares its sync
    store's, which has the async methods too)."""
    if isinstance(store, AsyncConversationStore):
        saver: ConvostoreSaver = store.sync.langgraph_checkpointer
        return saver
    return ConvostoreSaver(store)


def key_value_store(store: ConversationStore | AsyncConversationStore) -> ConvostoreStore:
    """``store.langgraph_store``: one ``BaseStore`` per store, shared as the saver is."""
    if isinstance(store, AsyncConversationStore):
        kv: ConvostoreStore = store.sync.langgraph_store
        return kv
    return ConvostoreStore(store)
