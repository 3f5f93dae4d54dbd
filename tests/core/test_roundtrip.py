"""Content and metadata come back exactly as given, on every backend."""

from __future__ import annotations

from typing import Any

import pytest
from convostore import ConversationStore


def nested(depth: int) -> Any:
    value: Any = {"leaf": [1, 2.5, None, True, "x"]}
    for i in range(depth):
        value = {f"k{i}": [value]}
    return value


CASES: dict[str, Any] = {
    "nul in strings": {"text": "a\x00b", "list": ["\x00", "\u0000\u0001\u001f"]},
    "unicode": "héllo wörld — 你好 🌍 \u2028\u2029",
    "lone surrogate": "broken \ud800 pair",
    "string list": ["one", "two", ""],
    "multimodal": [
        {"type": "text", "text": "see"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
    ],
    "numbers": {"big": 2**70, "neg": -1, "float": 0.1, "tiny": 5e-324, "zero": -0.0},
    "deep nesting": nested(200),
    "empty": {"": "", "empty list": [], "empty dict": {}},
    "key order": {"z": 1, "a": 2, "m": 3},
}


@pytest.mark.parametrize("content", CASES.values(), ids=CASES.keys())
def test_content_and_metadata_round_trip(store: ConversationStore, content: Any) -> None:
    metadata = {"echo": content}
    mid = store.append_message(conversation_id="c", role="user", content=content, metadata=metadata)
    (message,) = store.get_messages(conversation_id="c")
    assert message.message_id == mid
    assert message.content == content
    assert message.metadata == metadata
    if isinstance(content, dict):
        assert list(message.content) == list(content)
    meta = store.update_conversation(conversation_id="c", metadata={"v": content})
    assert meta.metadata == {"v": content}
    assert store.get_conversation(conversation_id="c") == meta


def test_tuples_come_back_as_lists(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content={"t": (1, 2)})
    assert store.get_messages(conversation_id="c")[0].content == {"t": [1, 2]}


def test_a_5_mb_string_round_trips(store: ConversationStore) -> None:
    big = ("0123456789abcdef\x00é" * (5 * 1024 * 1024 // 18))[: 5 * 1024 * 1024]
    store.append_message(conversation_id="c", role="tool", content=big, metadata={"copy": big})
    (message,) = store.get_messages(conversation_id="c")
    assert message.content == big
    assert message.metadata == {"copy": big}


def test_ids_of_256_bytes_and_any_unicode_work(store: ConversationStore) -> None:
    cid = "é" * 128
    mid = "ü" * 128
    assert (
        store.append_message(conversation_id=cid, role="user", content="x", message_id=mid) == mid
    )
    assert store.get_messages(conversation_id=cid)[0].message_id == mid
    assert store.list_conversations().items[0].conversation_id == cid
