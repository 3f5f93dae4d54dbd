"""``ready()``: the database answers and holds the core's tables at this install's version."""

from __future__ import annotations

import pytest
from convostore import AsyncConversationStore, ConversationStore
from convostore.components import CORE


def _core_version(store: ConversationStore, version: int) -> None:
    store.backend.write(
        lambda tx: tx.execute(
            "UPDATE convostore_schema SET version = ? WHERE component = 'core'", [version]
        )
    )


def test_ready_follows_the_schema_version_and_the_connection(backend_url: str) -> None:
    store = ConversationStore(backend_url)
    assert store.ready() is True
    for version in (CORE.version + 1, CORE.version - 1):
        _core_version(store, version)
        assert store.ready() is False
    _core_version(store, CORE.version)
    assert store.ready() is True
    store.close()
    assert store.ready() is False  # closed: not ready, and no error


@pytest.mark.anyio
async def test_the_async_store_asks_the_same(backend_url: str) -> None:
    async with AsyncConversationStore(backend_url) as store:
        assert await store.ready() is True
