"""Conversation metadata, listing with cursors, ownership and per-user deletion."""

from __future__ import annotations

import itertools

import pytest
from convostore import (
    ConversationOwnershipError,
    ConversationStore,
    ListConversationsResult,
    MemoryValidationError,
)


@pytest.fixture
def ticking(backend_url: str):
    """A store whose clock advances 1 ms per call, so last_message_at orders are predictable."""
    counter = itertools.count(1_000)
    with ConversationStore(backend_url, clock=lambda: next(counter)) as s:
        yield s


def ids(result: ListConversationsResult) -> list[str]:
    return [c.conversation_id for c in result.items]


def test_conversation_meta_tracks_messages(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="a")
    first = store.get_conversation(conversation_id="c")
    store.append_message(conversation_id="c", role="assistant", content="b")
    meta = store.get_conversation(conversation_id="c")
    assert first is not None and meta is not None
    assert meta.conversation_id == "c"
    assert meta.message_count == 2
    assert meta.created_at == first.created_at
    assert meta.last_message_at >= first.last_message_at
    assert meta.metadata is None
    dumped = meta.model_dump(by_alias=True)
    assert set(dumped) >= {"conversationId", "createdAt", "lastMessageAt", "messageCount"}


def test_update_conversation_merges_shallowly_and_creates(store: ConversationStore) -> None:
    meta = store.update_conversation(conversation_id="new", metadata={"title": "T", "tag": "x"})
    assert meta.metadata == {"title": "T", "tag": "x"} and meta.message_count == 0
    meta = store.update_conversation(
        conversation_id="new", metadata={"tag": None, "nested": {"a": 1}}
    )
    assert meta.metadata == {"title": "T", "nested": {"a": 1}}
    meta = store.update_conversation(conversation_id="new", metadata={"nested": {"b": 2}})
    assert meta.metadata == {"title": "T", "nested": {"b": 2}}  # shallow: replaced whole
    assert store.get_conversation(conversation_id="new") == meta


def test_list_orders_by_last_message_at_desc_by_default(ticking: ConversationStore) -> None:
    for cid in ["a", "b", "c"]:
        ticking.append_message(conversation_id=cid, role="user", content="x")
    ticking.append_message(conversation_id="a", role="user", content="y")
    assert ids(ticking.list_conversations()) == ["a", "c", "b"]
    assert ids(ticking.list_conversations(order="asc")) == ["b", "c", "a"]


def test_ties_are_broken_by_id(backend_url: str) -> None:
    with ConversationStore(backend_url, clock=lambda: 5) as store:
        for cid in ["b", "a", "c"]:
            store.append_message(conversation_id=cid, role="user", content="x")
        assert ids(store.list_conversations()) == ["c", "b", "a"]
        assert ids(store.list_conversations(order="asc")) == ["a", "b", "c"]


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_walking_pages_both_ways_visits_everything_once(
    ticking: ConversationStore, order: str
) -> None:
    for i in range(23):
        ticking.append_message(conversation_id=f"c{i:02}", role="user", content="x", user_id="u")
    expected = ids(ticking.list_conversations(limit=100, order=order))  # type: ignore[arg-type]
    assert len(expected) == 23
    pages, cursor = [], None
    while True:
        page = ticking.list_conversations(limit=5, order=order, after=cursor, user_id="u")  # type: ignore[arg-type]
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [i for p in pages for i in ids(p)] == expected
    assert pages[0].previous_cursor is None
    assert all(p.previous_cursor for p in pages[1:])
    # and back again with previous_cursor
    back, page = [], pages[-1]
    while page.previous_cursor:
        page = ticking.list_conversations(
            limit=5, order=order, before=page.previous_cursor, user_id="u"
        )  # type: ignore[arg-type]
        back.append(ids(page))
    assert back == [ids(p) for p in pages[-2::-1]]
    assert page.next_cursor is not None


def test_list_by_user_shows_only_that_users_conversations(store: ConversationStore) -> None:
    store.append_message(conversation_id="a1", role="user", content="x", user_id="alice")
    store.append_message(conversation_id="b1", role="user", content="x", user_id="bob")
    store.append_message(conversation_id="free", role="user", content="x")
    store.update_conversation(conversation_id="a2", metadata={"t": 1}, user_id="alice")
    assert sorted(ids(store.list_conversations(user_id="alice"))) == ["a1", "a2"]
    assert ids(store.list_conversations(user_id="bob")) == ["b1"]
    assert ids(store.list_conversations(user_id="nobody")) == []
    assert len(store.list_conversations().items) == 4


def test_another_users_conversation_is_refused(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="mine", user_id="alice")
    with pytest.raises(ConversationOwnershipError, match="user_id 'mallory'"):
        store.append_message(conversation_id="c", role="user", content="x", user_id="mallory")
    with pytest.raises(ConversationOwnershipError):
        store.update_conversation(conversation_id="c", metadata={"x": 1}, user_id="mallory")
    # the agent path without a user_id may append
    store.append_message(conversation_id="c", role="assistant", content="reply")
    assert [m.content for m in store.get_messages(conversation_id="c")] == ["mine", "reply"]
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.user_id == "alice" and meta.metadata is None


def test_an_unowned_conversation_is_claimed_by_its_first_user(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x")
    store.append_message(conversation_id="c", role="user", content="y", user_id="alice")
    assert ids(store.list_conversations(user_id="alice")) == ["c"]


def test_delete_conversation_removes_everything(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x", user_id="u")
    store.delete_conversation(conversation_id="c")
    store.delete_conversation(conversation_id="c")
    assert store.get_conversation(conversation_id="c") is None
    assert store.get_messages(conversation_id="c") == []
    assert ids(store.list_conversations(user_id="u")) == []
    store.append_message(conversation_id="c", role="user", content="again", user_id="v")
    assert [m.content for m in store.get_messages(conversation_id="c")] == ["again"]


def test_delete_user_data_removes_all_of_one_user(store: ConversationStore) -> None:
    for i in range(3):
        store.append_message(conversation_id=f"a{i}", role="user", content="x", user_id="alice")
    store.append_message(conversation_id="b", role="user", content="x", user_id="bob")
    assert store.delete_user_data(user_id="alice") == 3
    assert store.delete_user_data(user_id="alice") == 0
    assert ids(store.list_conversations()) == ["b"]
    assert store.get_messages(conversation_id="a0") == []


def test_cursor_garbage_is_refused(store: ConversationStore) -> None:
    with pytest.raises(MemoryValidationError, match="after: 'zzz' is not a cursor"):
        store.list_conversations(after="zzz")
    with pytest.raises(MemoryValidationError, match="before"):
        store.list_conversations(before="eyJ4IjoxfQ")
