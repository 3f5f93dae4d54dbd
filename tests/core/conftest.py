from __future__ import annotations

from collections.abc import Iterator

import pytest
from convostore import AsyncConversationStore, ConversationStore, Limits


@pytest.fixture
def store(backend_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(backend_url) as s:
        yield s


@pytest.fixture
def small_store(backend_url: str) -> Iterator[ConversationStore]:
    """A store with small limits, so quota and size tests stay fast."""
    limits = Limits(max_messages_per_conversation=5, max_content_bytes=1000, max_metadata_bytes=500)
    with ConversationStore(backend_url, limits=limits) as s:
        yield s


@pytest.fixture
def astore(store: ConversationStore) -> AsyncConversationStore:
    return AsyncConversationStore(sync=store)
