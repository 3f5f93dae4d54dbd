"""append / get / update / delete / clear, and the cursor semantics of get_messages."""

from __future__ import annotations

import pytest
from convostore import (
    ConversationStore,
    MemoryValidationError,
    MessageIdConflictError,
    MessageNotFoundError,
)


def fill(store: ConversationStore, n: int, cid: str = "c") -> list[str]:
    return [
        store.append_message(conversation_id=cid, role="user", content=f"m{i}") for i in range(n)
    ]


def contents(messages: list) -> list:
    return [m.content for m in messages]


def test_append_returns_msg_ids_and_get_returns_them_in_order(store: ConversationStore) -> None:
    ids = fill(store, 3)
    assert all(i.startswith("msg_") for i in ids)
    assert len(set(ids)) == 3
    got = store.get_messages(conversation_id="c")
    assert [m.message_id for m in got] == ids
    assert contents(got) == ["m0", "m1", "m2"]
    assert all(m.role == "user" and m.updated_at is None for m in got)


def test_missing_conversation_reads_as_empty(store: ConversationStore) -> None:
    assert store.get_messages(conversation_id="nope") == []
    assert store.get_conversation(conversation_id="nope") is None


def test_default_page_is_the_oldest_twenty(store: ConversationStore) -> None:
    fill(store, 25)
    assert contents(store.get_messages(conversation_id="c")) == [f"m{i}" for i in range(20)]


def test_desc_without_cursor_gives_the_newest_first(store: ConversationStore) -> None:
    fill(store, 10)
    got = store.get_messages(conversation_id="c", limit=3, order="desc")
    assert contents(got) == ["m9", "m8", "m7"]


def test_after_and_before_select_the_nearest_messages(store: ConversationStore) -> None:
    ids = fill(store, 10)
    cid = "c"
    assert contents(store.get_messages(conversation_id=cid, after=ids[4], limit=3)) == [
        "m5",
        "m6",
        "m7",
    ]
    assert contents(
        store.get_messages(conversation_id=cid, after=ids[4], limit=3, order="desc")
    ) == [
        "m7",
        "m6",
        "m5",
    ]
    assert contents(store.get_messages(conversation_id=cid, before=ids[4], limit=3)) == [
        "m1",
        "m2",
        "m3",
    ]
    assert contents(
        store.get_messages(conversation_id=cid, before=ids[4], limit=3, order="desc")
    ) == [
        "m3",
        "m2",
        "m1",
    ]
    assert store.get_messages(conversation_id=cid, after=ids[-1]) == []
    assert store.get_messages(conversation_id=cid, before=ids[0]) == []


def test_paging_forward_and_backward_visits_every_message_once(store: ConversationStore) -> None:
    ids = fill(store, 23)
    seen, cursor = [], None
    while page := store.get_messages(conversation_id="c", limit=5, after=cursor):
        seen += [m.message_id for m in page]
        cursor = page[-1].message_id
    assert seen == ids
    seen, cursor = [], None
    while page := store.get_messages(conversation_id="c", limit=5, order="desc", before=cursor):
        seen += [m.message_id for m in page]
        cursor = page[-1].message_id
        if cursor == ids[0]:
            break
    assert seen == ids[::-1]


def test_unknown_cursor_is_refused(store: ConversationStore) -> None:
    fill(store, 2)
    with pytest.raises(MemoryValidationError, match="after: no message 'msg_nope'"):
        store.get_messages(conversation_id="c", after="msg_nope")
    with pytest.raises(MemoryValidationError, match="before"):
        store.get_messages(conversation_id="c", before="msg_nope")


def test_update_message_overwrites_only_what_is_given(store: ConversationStore) -> None:
    mid = store.append_message(
        conversation_id="c", role="assistant", content="draft", metadata={"tokens": 3}
    )
    original = store.get_messages(conversation_id="c")[0]
    updated = store.update_message(conversation_id="c", message_id=mid, content="final")
    assert updated.content == "final"
    assert updated.metadata == {"tokens": 3}
    assert updated.updated_at is not None and updated.updated_at >= original.created_at
    assert updated.created_at == original.created_at
    updated = store.update_message(conversation_id="c", message_id=mid, metadata={"edited": True})
    assert updated.content == "final"
    assert updated.metadata == {"edited": True}  # replaced, not merged
    assert store.get_messages(conversation_id="c") == [updated]


def test_update_missing_message_raises_not_found(store: ConversationStore) -> None:
    with pytest.raises(MessageNotFoundError, match="msg_x"):
        store.update_message(conversation_id="c", message_id="msg_x", content="y")
    with pytest.raises(MemoryValidationError, match="content, metadata"):
        store.update_message(conversation_id="c", message_id="msg_x")


def test_delete_message_is_idempotent_and_counts(store: ConversationStore) -> None:
    ids = fill(store, 3)
    store.delete_message(conversation_id="c", message_id=ids[1])
    store.delete_message(conversation_id="c", message_id=ids[1])
    store.delete_message(conversation_id="other", message_id=ids[1])
    assert contents(store.get_messages(conversation_id="c")) == ["m0", "m2"]
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 2
    # appends after a delete keep their place after every earlier message
    store.append_message(conversation_id="c", role="user", content="m3")
    assert contents(store.get_messages(conversation_id="c")) == ["m0", "m2", "m3"]


def test_clear_keeps_the_conversation_and_its_metadata(store: ConversationStore) -> None:
    fill(store, 3)
    store.update_conversation(conversation_id="c", metadata={"title": "t"})
    store.clear_messages(conversation_id="c")
    store.clear_messages(conversation_id="missing")
    assert store.get_messages(conversation_id="c") == []
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 0 and meta.metadata == {"title": "t"}
    fill(store, 1)
    assert contents(store.get_messages(conversation_id="c")) == ["m0"]


def test_caller_message_id_makes_retries_idempotent(store: ConversationStore) -> None:
    args = {"conversation_id": "c", "role": "user", "content": {"q": 1}, "message_id": "client-1"}
    assert store.append_message(**args) == "client-1"
    assert store.append_message(**args) == "client-1"
    assert len(store.get_messages(conversation_id="c")) == 1
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 1
    with pytest.raises(MessageIdConflictError, match="client-1"):
        store.append_message(**{**args, "content": {"q": 2}})
    assert contents(store.get_messages(conversation_id="c")) == [{"q": 1}]
    # ids are scoped to their conversation
    assert store.append_message(**{**args, "conversation_id": "d"}) == "client-1"


def test_append_messages_is_all_or_nothing(store: ConversationStore) -> None:
    ids = store.append_messages(
        conversation_id="c",
        messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    )
    assert len(ids) == 2
    with pytest.raises(MemoryValidationError, match=r"messages\[1\]"):
        store.append_messages(
            conversation_id="c",
            messages=[{"role": "user", "content": "c"}, {"role": "robot", "content": "d"}],
        )
    with pytest.raises(MessageIdConflictError):
        store.append_messages(
            conversation_id="c",
            messages=[
                {"role": "user", "content": "e"},
                {"role": "user", "content": "other", "message_id": ids[0]},
            ],
        )
    assert contents(store.get_messages(conversation_id="c")) == ["a", "b"]
    assert store.append_messages(conversation_id="c", messages=[]) == []


def test_get_message_by_id(store: ConversationStore) -> None:
    (mid,) = fill(store, 1)
    message = store.get_message(conversation_id="c", message_id=mid)
    assert message is not None and message.content == "m0"
    assert store.get_message(conversation_id="c", message_id="msg_missing") is None


def test_get_history_reads_everything_or_the_newest(store: ConversationStore) -> None:
    ids = fill(store, 150)
    assert [m.message_id for m in store.get_history(conversation_id="c")] == ids
    assert [m.message_id for m in store.get_history(conversation_id="c", last=3)] == ids[-3:]
    assert store.get_history(conversation_id="c", last=0) == []
    assert store.get_history(conversation_id="missing") == []
    with pytest.raises(MemoryValidationError, match="last"):
        store.get_history(conversation_id="c", last=-1)


def test_pop_message_removes_the_newest(store: ConversationStore) -> None:
    fill(store, 2)
    popped = store.pop_message(conversation_id="c")
    assert popped is not None and popped.content == "m1"
    assert contents(store.get_messages(conversation_id="c")) == ["m0"]
    assert store.pop_message(conversation_id="c") is not None
    assert store.pop_message(conversation_id="c") is None
    assert store.pop_message(conversation_id="missing") is None
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.message_count == 0


def test_a_message_keeps_the_created_at_it_brings(store: ConversationStore) -> None:
    """An importer carries each message's own time (epoch ms); the others take the append's;
    the one-statement append after this store's own write (PostgreSQL) keeps it too."""
    old = 1_600_000_000_000
    ids = store.append_messages(
        conversation_id="c",
        messages=[
            {"role": "user", "content": "then", "created_at": old},
            {"role": "assistant", "content": "now"},
        ],
    )
    store.append_messages(
        conversation_id="c",
        messages=[{"role": "user", "content": "later", "created_at": old + 5, "message_id": "m3"}],
    )
    got = store.get_messages(conversation_id="c")
    assert [m.message_id for m in got][:2] == ids
    assert got[0].created_at == old and got[1].created_at > old + 10**9
    assert got[2].created_at == old + 5
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.last_message_at >= got[1].created_at  # written now
    for bad in (-1, "2020-01-01", True, 2**63):
        with pytest.raises(MemoryValidationError, match=r"messages\[0\]\.created_at"):
            store.append_messages(
                conversation_id="c",
                messages=[
                    {"role": "user", "content": "x", "created_at": bad},
                    {"role": "user", "content": "y"},
                ],
            )
    with pytest.raises(MemoryValidationError, match="not message fields"):
        store.sync_messages(
            conversation_id="s",
            messages=[{"role": "user", "content": "x", "message_id": "a", "created_at": old}],
        )
    assert len(store.get_messages(conversation_id="c")) == 3
