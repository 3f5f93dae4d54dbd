"""Conversations grouped by an id prefix: find them, delete them together, and which message
ids a conversation holds — the calls adapters with one conversation per key build on."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from convostore import (
    ConversationOwnershipError,
    ConversationStore,
    MemoryValidationError,
    StorageError,
)

Snapshot = Any


def _add(store: ConversationStore, cid: str, user_id: str | None = None) -> None:
    store.append_message(conversation_id=cid, role="user", content=cid, user_id=user_id)


def test_find_conversations_is_a_prefix_range(store: ConversationStore) -> None:
    for cid in ["p/a", "p/b/sub", "p0", "p", "q/a", "p/\U0010ffff", "p/é", "p/%_"]:
        _add(store, cid)
    found = [c.conversation_id for c in store.find_conversations(id_prefix="p/")]
    assert found == sorted(["p/a", "p/b/sub", "p/\U0010ffff", "p/é", "p/%_"])
    assert [c.conversation_id for c in store.find_conversations(id_prefix="p/b/")] == ["p/b/sub"]
    assert store.find_conversations(id_prefix="none/") == []
    meta = store.find_conversations(id_prefix="q/")[0]
    assert (meta.message_count, meta.metadata) == (1, None)


@pytest.mark.parametrize("last", ["\ud7ff", "\U0010ffff", "z"])
def test_the_prefix_bound_holds_at_the_edges_of_unicode(
    store: ConversationStore, last: str
) -> None:
    inside, outside = f"k{last}x", f"k{chr(ord(last) + 1) if last < chr(0xD7FF) else chr(0xE000)}"
    _add(store, inside)
    if last != "\U0010ffff":
        _add(store, outside)
    assert [c.conversation_id for c in store.find_conversations(id_prefix=f"k{last}")] == [inside]
    assert [b[0] for b in store.find_conversation_briefs(id_prefix=f"k{last}")] == [inside]


def test_find_conversations_with_a_user_shows_only_theirs(store: ConversationStore) -> None:
    _add(store, "p/alice", "alice")
    _add(store, "p/bob", "bob")
    _add(store, "p/shared")
    found = store.find_conversations(id_prefix="p/", user_id="alice")
    assert [c.conversation_id for c in found] == ["p/alice"]


def test_find_conversation_briefs_are_find_conversations_without_the_models(
    store: ConversationStore,
) -> None:
    for cid in ["p/a", "p/b/sub", "p0", "p", "q/a", "p/\U0010ffff", "p/é"]:
        _add(store, cid, "alice" if cid.endswith("a") else None)
    store.update_conversation(conversation_id="p/a", metadata={"k": [1, {"é": None}]})
    store.update_conversation(conversation_id="p/empty", metadata={"k": 2})
    metas = store.find_conversations(id_prefix="p/")
    briefs = store.find_conversation_briefs(id_prefix="p/")
    assert briefs == [
        (m.conversation_id, m.last_message_at, m.message_count, m.metadata) for m in metas
    ]
    assert [b[2:] for b in briefs if b[0] in ("p/a", "p/empty")] == [
        (1, {"k": [1, {"é": None}]}),
        (0, {"k": 2}),
    ]
    assert store.find_conversation_briefs(id_prefix="p/", metadata=False) == [
        (cid, at, count, None) for cid, at, count, _ in briefs
    ]
    assert store.find_conversation_briefs(id_prefix="p/", user_id="alice") == [briefs[0]]
    assert store.find_conversation_briefs(id_prefix="p/b/") == [briefs[1]]
    assert store.find_conversation_briefs(id_prefix="none/") == []


def test_find_conversation_briefs_with_a_key_give_its_value(store: ConversationStore) -> None:
    """With a key, the last field is that key's value, wherever the key is (only a first key
    is decoded alone), None where it is absent or there is no metadata."""
    store.update_conversation(conversation_id="k/first", metadata={"s": {"x": [1]}, "t": 2})
    store.update_conversation(conversation_id="k/later", metadata={"t": 2, "s": "é"})
    store.update_conversation(conversation_id="k/none", metadata={"t": 3})
    _add(store, "k/plain")
    assert [b[3] for b in store.find_conversation_briefs(id_prefix="k/", metadata="s")] == [
        {"x": [1]},
        "é",
        None,
        None,
    ]
    assert [b[3] for b in store.find_conversation_briefs(id_prefix="k/", metadata="t")] == [
        2,
        2,
        3,
        None,
    ]
    with pytest.raises(MemoryValidationError, match="metadata must be a bool or a key"):
        store.find_conversation_briefs(id_prefix="k/", metadata=1)  # type: ignore[arg-type]


def test_find_conversation_briefs_take_any_key_metadata_may_hold(store: ConversationStore) -> None:
    """Keys with NUL, a lone surrogate or control characters are keys metadata may hold (JSON
    escapes them): asked for, they give their values back, deep nesting included."""
    deep: Any = "bottom"
    for _ in range(200):
        deep = [deep]
    odd = ["a\x00b", "\ud800", "\u202e\x1b", "é"]
    store.update_conversation(conversation_id="h/1", metadata={k: i for i, k in enumerate(odd)})
    store.update_conversation(conversation_id="h/2", metadata={"\x00": deep})
    for i, key in enumerate(odd):
        assert [b[3] for b in store.find_conversation_briefs(id_prefix="h/", metadata=key)] == [
            i,
            None,
        ]
    assert store.find_conversation_briefs(id_prefix="h/2", metadata="\x00")[0][3] == deep


def test_delete_conversations_takes_ids_and_a_prefix_in_one_transaction(
    store: ConversationStore,
) -> None:
    for cid in ["s", "s/sub1", "s/sub2", "s0", "t"]:
        _add(store, cid)
    assert store.delete_conversations(conversation_ids=["s", "missing"], id_prefix="s/") == 3
    left = [c.conversation_id for c in store.list_conversations().items]
    assert sorted(left) == ["s0", "t"]
    assert store.delete_conversations(conversation_ids=["s"]) == 0  # idempotent


def test_delete_conversations_refuses_another_users_and_deletes_nothing(
    store: ConversationStore, snapshot: Snapshot
) -> None:
    _add(store, "s/a", "alice")
    _add(store, "s/b", "bob")
    before = snapshot(store)
    with pytest.raises(ConversationOwnershipError):
        store.delete_conversations(id_prefix="s/", user_id="alice")
    assert snapshot(store) == before
    assert store.delete_conversations(conversation_ids=["s/a"], user_id="alice") == 1


def test_existing_message_ids(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x", message_id="m1")
    store.append_message(conversation_id="other", role="user", content="x", message_id="m2")
    assert store.existing_message_ids(conversation_id="c", message_ids=["m1", "m2", "m3"]) == {"m1"}
    assert store.existing_message_ids(conversation_id="none", message_ids=["m1"]) == set()
    assert store.existing_message_ids(conversation_id="c", message_ids=[]) == set()


@pytest.mark.parametrize(
    ("call", "kwargs", "argument"),
    [
        ("find_conversations", {"id_prefix": ""}, "id_prefix"),
        ("find_conversations", {"id_prefix": "a\x00"}, "id_prefix"),
        ("find_conversations", {"id_prefix": "\ud800"}, "id_prefix"),
        ("delete_conversations", {"conversation_ids": "abc"}, "conversation_ids"),
        ("delete_conversations", {"conversation_ids": ["ok", "x" * 300]}, "conversation_ids"),
        ("delete_conversations", {"id_prefix": "a\x00"}, "id_prefix"),
        ("existing_message_ids", {"conversation_id": "c", "message_ids": "m1"}, "message_ids"),
        ("existing_message_ids", {"conversation_id": "c", "message_ids": [1]}, "message_ids"),
        ("find_conversations", {"id_prefix": "p" * (1 << 20)}, "id_prefix must be 1 to 256"),
        ("find_conversations", {"id_prefix": "p", "user_id": "u\x00"}, "user_id"),
        ("find_conversation_briefs", {"id_prefix": ""}, "id_prefix"),
        ("find_conversation_briefs", {"id_prefix": "p", "user_id": "u\x00"}, "user_id"),
        ("find_conversation_briefs", {"id_prefix": "\ud800"}, "id_prefix"),
        ("find_conversation_briefs", {"id_prefix": "p", "metadata": 2**70}, "metadata"),
        (
            "find_conversation_briefs",
            {"id_prefix": "p", "metadata": "k" * (50 * 1024 * 1024 + 1)},
            "metadata: a key of 52428801 characters is longer than the limit of 52428800",
        ),
        ("delete_conversations", {"conversation_ids": ["\ud800"]}, "conversation_ids"),
        ("delete_conversations", {"conversation_ids": [2**70]}, "conversation_ids"),
        (
            "existing_message_ids",
            {"conversation_id": "c", "message_ids": ["m" * (1 << 20)]},
            "message_ids",
        ),
        (
            "existing_message_ids",
            {"conversation_id": "c\x00", "message_ids": []},
            "conversation_id",
        ),
    ],
)
def test_bad_arguments_are_refused(
    store: ConversationStore, snapshot: Snapshot, call: str, kwargs: dict[str, Any], argument: str
) -> None:
    _add(store, "ok")
    before = snapshot(store)
    with pytest.raises(MemoryValidationError, match=argument):
        getattr(store, call)(**kwargs)
    assert snapshot(store) == before


def _orphans(store: ConversationStore) -> list[tuple[Any, ...]]:
    return store.backend.read(
        lambda tx: tx.execute(
            "SELECT conversation_id, count(*) FROM convostore_messages m WHERE NOT EXISTS"
            " (SELECT 1 FROM convostore_conversations c WHERE c.id = m.conversation_id)"
            " GROUP BY conversation_id"
        )
    )


def test_a_delete_racing_appends_leaves_no_orphan_messages(shared_url: str) -> None:
    """Appends to a session's subkeys while the session is deleted again and again: every
    message left belongs to a conversation, and each count matches its messages."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def append(cid: str) -> None:
        with ConversationStore(shared_url) as store:
            try:
                while not stop.is_set():
                    _add(store, cid)
            except (StorageError, AssertionError) as exc:  # pragma: no cover - reported below
                errors.append(exc)

    with ConversationStore(shared_url) as store:
        writers = [threading.Thread(target=append, args=(f"s/{i}",)) for i in range(3)]
        for w in writers:
            w.start()
        try:
            for _ in range(40):
                store.delete_conversations(conversation_ids=["s"], id_prefix="s/")
        finally:
            stop.set()
            for w in writers:
                w.join()
        assert errors == []
        assert _orphans(store) == []
        for meta in store.find_conversations(id_prefix="s/"):
            stored = store.get_history(conversation_id=meta.conversation_id)
            assert meta.message_count == len(stored)


def test_another_users_conversation_is_out_of_reach(
    store: ConversationStore, snapshot: Snapshot
) -> None:
    store.append_message(
        conversation_id="c", role="user", content="x", user_id="alice", message_id="m1"
    )
    before = snapshot(store)
    with pytest.raises(ConversationOwnershipError):
        store.existing_message_ids(conversation_id="c", message_ids=["m1"], user_id="mallory")
    with pytest.raises(ConversationOwnershipError):
        store.delete_conversations(conversation_ids=["c"], user_id="mallory")
    assert store.find_conversations(id_prefix="c", user_id="mallory") == []
    assert store.find_conversation_briefs(id_prefix="c", user_id="mallory") == []
    assert snapshot(store) == before
