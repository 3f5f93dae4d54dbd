from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

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


def snapshot(store: ConversationStore) -> list[tuple[Any, ...]]:
    """Everything stored: each conversation's metadata and all its messages."""
    result, cursor = [], None
    while True:
        page = store.list_conversations(limit=100, after=cursor)
        for meta in page.items:
            messages = store.get_history(conversation_id=meta.conversation_id)
            result.append((meta, [m.model_dump() for m in messages]))
        cursor = page.next_cursor
        if cursor is None:
            return result


@pytest.fixture(name="snapshot")
def snapshot_fixture() -> Callable[[ConversationStore], list[tuple[Any, ...]]]:
    return snapshot
