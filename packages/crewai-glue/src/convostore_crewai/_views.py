"""The entry point this package registers on convostore stores (``convostore.views``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convostore import AsyncConversationStore, ConversationStore

from .memory import convostore_memory


def memory_factory(store: ConversationStore | AsyncConversationStore) -> Callable[..., Any]:
    """``store.crewai_memory(**options)``."""

    def crewai_memory(**options: Any) -> Any:
        """A ``crewai.Memory`` on this store (``options`` go to ``Memory``, e.g. ``llm=``)."""
        return convostore_memory(store, **options)

    return crewai_memory
