"""``append_messages(fold=...)``: a caller's fold of the added messages into the conversation's
metadata, in the append's transaction; and ``with_limits``."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from convostore import ConversationStore, Message
from convostore.errors import MemoryQuotaExceededError, MemoryValidationError


def count_fold(metadata: dict[str, Any] | None, added: list[Message]) -> dict[str, Any]:
    seen = (metadata or {}).get("seen", [])
    return {"seen": [*seen, *(m.content for m in added)], "n": len(seen) + len(added)}


def test_fold_sees_only_added_messages_and_merges_its_patch(store: ConversationStore) -> None:
    store.update_conversation(conversation_id="c", metadata={"title": "kept", "drop": 1})
    batch = [
        {"role": "user", "content": "a", "message_id": "m1"},
        {"role": "assistant", "content": "b", "message_id": "m2"},
    ]
    store.append_messages(conversation_id="c", messages=batch, fold=count_fold)
    # a retried batch adds one new message: the fold sees only that one
    batch.append({"role": "user", "content": "c", "message_id": "m3"})
    store.append_messages(conversation_id="c", messages=batch, fold=count_fold)
    # nothing new: the fold is not called, the metadata stays
    store.append_messages(conversation_id="c", messages=batch, fold=count_fold)
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None
    assert meta.metadata == {"title": "kept", "drop": 1, "seen": ["a", "b", "c"], "n": 3}

    def drop(metadata: dict[str, Any] | None, added: list[Message]) -> dict[str, Any]:
        return {"drop": None}

    store.append_messages(
        conversation_id="c", messages=[{"role": "user", "content": "d"}], fold=drop
    )
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata is not None and "drop" not in meta.metadata


def test_failing_fold_writes_nothing(store: ConversationStore) -> None:
    def bad(metadata: dict[str, Any] | None, added: list[Message]) -> Any:
        return ["not", "a", "dict"]

    def nan(metadata: dict[str, Any] | None, added: list[Message]) -> dict[str, Any]:
        return {"x": float("nan")}

    with pytest.raises(MemoryValidationError, match="fold must return a dict"):
        store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "a"}], fold=bad
        )
    with pytest.raises(MemoryValidationError, match="NaN"):
        store.append_messages(
            conversation_id="c", messages=[{"role": "user", "content": "a"}], fold=nan
        )
    assert store.get_history(conversation_id="c") == []


def test_concurrent_folds_are_serialized(shared_url: str) -> None:
    stores = [ConversationStore(shared_url) for _ in range(4)]
    try:

        def worker(store: ConversationStore, w: int) -> None:
            for i in range(15):
                store.append_messages(
                    conversation_id="c",
                    messages=[{"role": "user", "content": f"{w}-{i}"}],
                    fold=count_fold,
                )

        threads = [threading.Thread(target=worker, args=(s, w)) for w, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        meta = stores[0].get_conversation(conversation_id="c")
        history = stores[0].get_history(conversation_id="c")
        assert meta is not None and meta.metadata is not None
        assert meta.metadata["n"] == 60
        assert meta.metadata["seen"] == [m.content for m in history]  # folded in commit order
    finally:
        for s in stores:
            s.close()


def test_with_limits_shares_the_database(store: ConversationStore) -> None:
    roomy = store.with_limits(max_messages_per_conversation=3)
    assert roomy.backend is store.backend and store.limits.max_messages_per_conversation == 10_000
    roomy.append_messages(
        conversation_id="c", messages=[{"role": "user", "content": str(i)} for i in range(3)]
    )
    with pytest.raises(MemoryQuotaExceededError, match="limit of 3 messages"):
        roomy.append_message(conversation_id="c", role="user", content="x")
    assert len(store.get_history(conversation_id="c")) == 3
    store.append_message(conversation_id="c", role="user", content="x")
