"""fork_conversation: a copy up to a message, in one transaction, that then lives on its own."""

from __future__ import annotations

from typing import Any

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationExistsError,
    ConversationNotFoundError,
    ConversationOwnershipError,
    ConversationStore,
    MemoryValidationError,
)
from test_hostile import BAD_IDS, _id


def views(store: ConversationStore, cid: str) -> list[tuple[Any, ...]]:
    return [
        (m.message_id, m.role, m.content, m.metadata, m.created_at, m.updated_at)
        for m in store.get_history(conversation_id=cid)
    ]


@pytest.fixture
def source(store: ConversationStore) -> ConversationStore:
    for i in range(6):
        store.append_message(
            conversation_id="src",
            role="user" if i % 2 == 0 else "assistant",
            content={"i": i, "text": "nul \x00 and 🧠"},
            metadata={"n": i},
            message_id=f"m{i}",
            user_id="alice",
        )
    store.update_message(conversation_id="src", message_id="m1", content="edited")
    store.update_conversation(conversation_id="src", metadata={"title": "T", "k": 1})
    return store


def test_a_fork_copies_everything(source: ConversationStore) -> None:
    meta = source.fork_conversation(conversation_id="src", new_conversation_id="copy")
    assert views(source, "copy") == views(source, "src")
    assert (meta.conversation_id, meta.message_count, meta.user_id) == ("copy", 6, "alice")
    assert meta.metadata == {
        "title": "T",
        "k": 1,
        "forkedFrom": {"conversationId": "src", "messageId": None},
    }
    assert source.get_conversation(conversation_id="copy") == meta


def test_a_fork_up_to_a_message(source: ConversationStore) -> None:
    meta = source.fork_conversation(
        conversation_id="src",
        new_conversation_id="cut",
        up_to="m2",
        user_id="alice",
        metadata={"k": None, "branch": "b"},
    )
    assert views(source, "cut") == views(source, "src")[:3]
    assert meta.message_count == 3
    assert meta.metadata == {
        "title": "T",
        "branch": "b",
        "forkedFrom": {"conversationId": "src", "messageId": "m2"},
    }


def test_the_two_sides_live_apart(source: ConversationStore) -> None:
    source.fork_conversation(conversation_id="src", new_conversation_id="b", up_to="m3")
    before = views(source, "src")
    source.append_message(conversation_id="b", role="user", content="only in b", message_id="x")
    source.update_message(conversation_id="b", message_id="m0", content="changed in b")
    source.delete_message(conversation_id="b", message_id="m3")
    assert views(source, "src") == before
    source.append_message(conversation_id="src", role="user", content="only in src")
    source.update_message(conversation_id="src", message_id="m1", content="changed in src")
    b = views(source, "b")
    assert [v[0] for v in b] == ["m0", "m1", "m2", "x"]
    assert b[0][2] == "changed in b" and b[1][2] == "edited"
    # appends to the fork keep the order after the copied messages
    assert source.get_messages(conversation_id="b", limit=1, order="desc")[0].message_id == "x"


def test_a_summary_past_the_cut_is_dropped(source: ConversationStore) -> None:
    source.update_conversation(
        conversation_id="src", metadata={"summary": "s", "summarizedUntil": "m4"}
    )
    early = source.fork_conversation(conversation_id="src", new_conversation_id="e", up_to="m2")
    late = source.fork_conversation(conversation_id="src", new_conversation_id="l", up_to="m4")
    assert early.metadata is not None and "summary" not in early.metadata
    assert late.metadata is not None and late.metadata["summarizedUntil"] == "m4"


def test_refusals(source: ConversationStore) -> None:
    source.append_message(conversation_id="taken", role="user", content="x")
    with pytest.raises(ConversationExistsError, match="'taken' is a conversation already"):
        source.fork_conversation(conversation_id="src", new_conversation_id="taken")
    with pytest.raises(ConversationExistsError):
        source.fork_conversation(conversation_id="src", new_conversation_id="src")
    with pytest.raises(ConversationNotFoundError):
        source.fork_conversation(conversation_id="missing", new_conversation_id="n")
    with pytest.raises(MemoryValidationError, match="up_to: no message 'nope'"):
        source.fork_conversation(conversation_id="src", new_conversation_id="n", up_to="nope")
    with pytest.raises(ConversationOwnershipError):
        source.fork_conversation(conversation_id="src", new_conversation_id="n", user_id="bob")
    assert source.get_conversation(conversation_id="n") is None
    assert views(source, "taken")[0][2] == "x"


@pytest.mark.parametrize("argument", ["conversation_id", "new_conversation_id", "up_to", "user_id"])
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_ids_are_refused(
    source: ConversationStore, argument: str, value: Any, message: str
) -> None:
    if argument in ("up_to", "user_id") and value is None:
        return  # None means: everything / the source's owner
    args: dict[str, Any] = {"conversation_id": "src", "new_conversation_id": "n", argument: value}
    with pytest.raises(MemoryValidationError, match=f"{argument} {message}"):
        source.fork_conversation(**args)
    assert source.get_conversation(conversation_id="n") is None


def test_a_big_fork_is_exact(store: ConversationStore) -> None:
    batch = [{"role": "user", "content": f"message {i}"} for i in range(100)]
    for _ in range(20):
        store.append_messages(conversation_id="big", messages=batch)  # type: ignore[arg-type]
    store.fork_conversation(conversation_id="big", new_conversation_id="big2")
    assert views(store, "big2") == views(store, "big")
    changes = store.get_changes(conversation_id="big2", after=0)
    assert [c.kind for c in changes.items] == ["message.created"] * 100


@pytest.mark.anyio
async def test_the_async_store_forks(astore: AsyncConversationStore) -> None:
    await astore.append_message(conversation_id="a", role="user", content="x")
    meta = await astore.fork_conversation(conversation_id="a", new_conversation_id="b")
    assert meta.message_count == 1
