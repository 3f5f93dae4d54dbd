"""The change feed: what happened to a conversation after a cursor, from every writer, and a
wait that wakes when another connection or process writes."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationOwnershipError,
    ConversationStore,
    MemoryValidationError,
)


def kinds(changes: Any) -> list[tuple[str, str | None]]:
    return [(c.kind, c.message_id) for c in changes.items]


def test_changes_after_a_cursor_in_commit_order(store: ConversationStore) -> None:
    start = store.get_changes(conversation_id="c")
    assert (start.items, start.cursor, start.conversation) == ([], 0, None)
    store.append_message(conversation_id="c", role="user", content="hi", message_id="m1")
    head = store.get_changes(conversation_id="c")
    assert head.items == [] and head.cursor == 1 and head.conversation is not None
    store.append_messages(
        conversation_id="c",
        messages=[
            {"role": "assistant", "content": "a", "message_id": "m2"},
            {"role": "user", "content": "b", "message_id": "m3"},
        ],
    )
    store.update_message(conversation_id="c", message_id="m2", content="a, edited")
    store.update_conversation(conversation_id="c", metadata={"title": "T"})
    store.delete_message(conversation_id="c", message_id="m3")
    store.pop_message(conversation_id="c")  # m2
    got = store.get_changes(conversation_id="c", after=head.cursor)
    # m2 and m3 were appended, then deleted: their rows are gone, so only the changes that
    # name them remain
    assert kinds(got) == [
        ("message.updated", "m2"),
        ("conversation.updated", None),
        ("message.deleted", "m3"),
        ("message.deleted", "m2"),
    ]
    assert [c.seq for c in got.items] == sorted(c.seq for c in got.items)
    assert got.items[0].message is None  # m2 was deleted since: the update names it only
    assert got.conversation is not None and got.conversation.metadata == {"title": "T"}
    assert got.cursor == got.items[-1].seq
    assert store.get_changes(conversation_id="c", after=got.cursor).items == []


def test_a_created_message_is_given_as_it_is_now(store: ConversationStore) -> None:
    head = store.get_changes(conversation_id="c").cursor
    store.append_message(conversation_id="c", role="user", content="v1", message_id="m1")
    store.update_message(conversation_id="c", message_id="m1", content="v2")
    got = store.get_changes(conversation_id="c", after=head)
    assert kinds(got) == [("message.created", "m1"), ("message.updated", "m1")]
    assert [c.message.content for c in got.items if c.message] == ["v2", "v2"]
    assert got.items[1].message is not None and got.items[1].message.updated_at is not None


def test_changes_page_with_the_cursor(store: ConversationStore) -> None:
    for i in range(7):
        store.append_message(conversation_id="c", role="user", content=str(i), message_id=f"m{i}")
        if i % 3 == 0:
            store.update_message(conversation_id="c", message_id=f"m{i}", content=f"{i}!")
    seen: list[tuple[str, str | None]] = []
    cursor = 0
    while True:
        page = store.get_changes(conversation_id="c", after=cursor, limit=2)
        if not page.items:
            break
        assert len(page.items) <= 2
        seen += kinds(page)
        cursor = page.cursor
    expected: list[tuple[str, str | None]] = []
    for i in range(7):
        expected.append(("message.created", f"m{i}"))
        if i % 3 == 0:
            expected.append(("message.updated", f"m{i}"))
    assert seen == expected


def test_clear_leaves_one_change(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x", message_id="m1")
    store.update_message(conversation_id="c", message_id="m1", content="y")
    store.clear_messages(conversation_id="c")
    got = store.get_changes(conversation_id="c", after=0)
    assert kinds(got) == [("messages.cleared", None)]
    store.append_message(conversation_id="c", role="user", content="again", message_id="m2")
    assert kinds(store.get_changes(conversation_id="c", after=got.cursor)) == [
        ("message.created", "m2")
    ]


def test_a_deleted_conversation_has_no_changes(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x")
    cursor = store.get_changes(conversation_id="c").cursor
    store.delete_conversation(conversation_id="c")
    gone = store.get_changes(conversation_id="c", after=cursor)
    assert (gone.items, gone.conversation) == ([], None)
    # made again: a cursor past its last change starts over
    store.append_message(conversation_id="c", role="user", content="new", message_id="n1")
    again = store.get_changes(conversation_id="c", after=cursor + 5)
    assert kinds(again) == [("message.created", "n1")]


def test_summary_folds_and_attachments_are_conversation_updates(store: ConversationStore) -> None:
    cursor = store.get_changes(conversation_id="c").cursor
    store.append_messages(
        conversation_id="c",
        messages=[{"role": "user", "content": "x", "message_id": "m1"}],
        fold=lambda metadata, added: {"summary": "s"},
    )
    sid = store.create_memory_store("m").memory_store_id
    store.attach_memory_stores("c", [sid])
    store.detach_memory_stores("c", [sid])
    assert kinds(store.get_changes(conversation_id="c", after=cursor)) == [
        ("message.created", "m1"),
        ("conversation.updated", None),
        ("conversation.updated", None),
        ("conversation.updated", None),
    ]


def test_changes_keep_to_the_owner(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="x", user_id="alice")
    with pytest.raises(ConversationOwnershipError):
        store.get_changes(conversation_id="c", after=0, user_id="mallory")
    assert len(store.get_changes(conversation_id="c", after=0, user_id="alice").items) == 1


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("after", -1, "after must be between 0"),
        ("after", 2**63, "after must be between 0"),
        ("after", True, "after must be None or an int, got bool"),
        ("after", "3", "after must be None or an int, got str"),
        ("limit", 0, "limit must be between 1 and 100"),
        ("limit", 2**70, "limit must be between 1 and 100"),
        ("conversation_id", "a\x00", "conversation_id must not contain NUL"),
        ("user_id", "\ud800", "user_id is not valid UTF-8"),
    ],
)
def test_bad_change_arguments_are_refused(
    store: ConversationStore, argument: str, value: Any, message: str
) -> None:
    args: dict[str, Any] = {"conversation_id": "c", argument: value}
    with pytest.raises(MemoryValidationError, match=message):
        store.get_changes(**args)


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "1", True, None])
def test_bad_timeouts_are_refused(store: ConversationStore, timeout: Any) -> None:
    with pytest.raises(MemoryValidationError, match="timeout must be a number of seconds"):
        store.wait_for_change(timeout)


def test_a_quiet_database_times_out(store: ConversationStore) -> None:
    store.enable_change_notifications()
    store.wait_for_change(0)  # forget what came before
    assert store.wait_for_change(0.2) is False


def test_another_connections_write_wakes_the_waiter(shared_url: str) -> None:
    with ConversationStore(shared_url) as watcher, ConversationStore(shared_url) as writer:
        watcher.enable_change_notifications()
        watcher.wait_for_change(0)
        cursor = watcher.get_changes(conversation_id="c").cursor
        thread = threading.Timer(
            0.2,
            lambda: writer.append_message(
                conversation_id="c", role="user", content="x", message_id="m1"
            ),
        )
        thread.start()
        assert watcher.wait_for_change(60) is True  # True: a change woke it (a timeout is False)
        thread.join()
        assert kinds(watcher.get_changes(conversation_id="c", after=cursor)) == [
            ("message.created", "m1")
        ]


def test_another_process_write_wakes_the_waiter(shared_url: str) -> None:
    with ConversationStore(shared_url) as watcher:
        watcher.enable_change_notifications()
        watcher.wait_for_change(0)
        code = (
            "import sys; from convostore import ConversationStore\n"
            "with ConversationStore(sys.argv[1]) as s:\n"
            "    s.append_message(conversation_id='c', role='user', content='from afar')\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code, shared_url])
        try:
            assert watcher.wait_for_change(30) is True
        finally:
            assert proc.wait(timeout=60) == 0
        got = watcher.get_changes(conversation_id="c", after=0)
        assert [c.message.content for c in got.items if c.message] == ["from afar"]


def test_own_writes_wake_the_waiter_too(store: ConversationStore) -> None:
    store.enable_change_notifications()
    store.wait_for_change(0)
    store.update_conversation(conversation_id="c", metadata={"k": 1})
    assert store.wait_for_change(5) is True


@pytest.mark.anyio
async def test_the_async_store_has_the_change_feed(astore: AsyncConversationStore) -> None:
    await astore.append_message(conversation_id="c", role="user", content="x", message_id="m1")
    got = await astore.get_changes(conversation_id="c", after=0)
    assert kinds(got) == [("message.created", "m1")]
    await astore.enable_change_notifications()
    assert await astore.wait_for_change(0) in (True, False)


def test_a_write_before_the_first_wait_is_not_missed(shared_url: str) -> None:
    """A live view reads the changes, then waits: a commit that lands between the two (after
    the store opened, or after enable_change_notifications) must still wake the first wait."""
    with ConversationStore(shared_url) as watcher, ConversationStore(shared_url) as writer:
        watcher.enable_change_notifications()
        writer.append_message(conversation_id="c", role="user", content="in between")
        assert watcher.wait_for_change(60) is True
