"""get_contents: the contents of a conversation's messages (all, or the newest N), oldest first."""

from __future__ import annotations

import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError


def test_get_contents_matches_get_history(store: ConversationStore) -> None:
    contents = ["plain", {"type": "x", "nul": "a\u0000b", "n": [1, 2.5, None]}, ["a", {"b": True}]]
    for content in contents:
        store.append_message(conversation_id="c", role="user", content=content)
    assert store.get_contents(conversation_id="c") == contents
    assert store.get_contents(conversation_id="c") == [
        m.content for m in store.get_history(conversation_id="c")
    ]
    assert store.get_contents(conversation_id="c", last=2) == contents[1:]
    assert store.get_contents(conversation_id="c", last=10**9) == contents
    assert store.get_contents(conversation_id="c", last=0) == []
    assert store.get_contents(conversation_id="missing") == []


def test_get_contents_arguments(store: ConversationStore) -> None:
    with pytest.raises(
        MemoryValidationError, match="last must be between 0 and 9223372036854775807, got -1"
    ):
        store.get_contents(conversation_id="c", last=-1)
    with pytest.raises(MemoryValidationError, match="conversation_id must be 1 to 256 bytes"):
        store.get_contents(conversation_id="x" * 300)


@pytest.mark.anyio
async def test_get_contents_async(astore: AsyncConversationStore) -> None:
    await astore.append_message(conversation_id="a", role="user", content="one")
    await astore.append_message(conversation_id="a", role="assistant", content="two")
    assert await astore.get_contents(conversation_id="a", last=1) == ["two"]
