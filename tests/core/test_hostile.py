"""Hostile input at every public entry point of the store, on every backend.

What belongs here: input a careless or malicious caller sends — forged cursors, huge integers,
NUL, lone surrogates, deep nesting, huge sizes, another user's ids. Each case must raise the
documented error (``MemoryValidationError`` for bad arguments, ``ConversationOwnershipError``
for another user's conversation), the same on memory, SQLite and PostgreSQL, and leave what is
stored exactly as it was. A ``StorageError`` here would be a bug: it means the database failed.

To extend: add a value to the lists below, or an entry point to ``CALLS``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from convostore import (
    AsyncConversationStore,
    ConversationOwnershipError,
    ConversationStore,
    MemoryValidationError,
)

Snapshot = Callable[[ConversationStore], list[tuple[Any, ...]]]

MID = "msg_alice_1"

# Every public entry point that takes a conversation, with valid arguments for ``c`` / MID.
CALLS: dict[str, dict[str, Any]] = {
    "append_message": {"conversation_id": "c", "role": "user", "content": "x"},
    "append_messages": {"conversation_id": "c", "messages": [{"role": "user", "content": "x"}]},
    "get_messages": {"conversation_id": "c"},
    "get_message": {"conversation_id": "c", "message_id": MID},
    "get_history": {"conversation_id": "c"},
    "get_contents": {"conversation_id": "c"},
    "pop_message": {"conversation_id": "c"},
    "update_message": {"conversation_id": "c", "message_id": MID, "content": "y"},
    "delete_message": {"conversation_id": "c", "message_id": MID},
    "clear_messages": {"conversation_id": "c"},
    "get_conversation": {"conversation_id": "c"},
    "update_conversation": {"conversation_id": "c", "metadata": {"k": "v"}},
    "delete_conversation": {"conversation_id": "c"},
    "sync_messages": {
        "conversation_id": "c",
        "messages": [{"role": "user", "content": "x", "message_id": "s1"}],
    },
}
READS_AND_DELETES = [
    name
    for name in CALLS
    if name not in ("append_message", "append_messages", "update_conversation", "sync_messages")
]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(value: Any) -> str:
    return _b64(json.dumps(value).encode())


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


BAD_IDS: list[tuple[Any, str]] = [
    ("a\x00b", "must not contain NUL"),
    ("\ud800", r"is not valid UTF-8 \(lone surrogate\)"),
    ("x" * (1 << 20), "must be 1 to 256 bytes of UTF-8, got 1048576 bytes"),
    ("", "must be 1 to 256 bytes"),
    (2**70, "must be a str, got int"),
    (None, "must be a str, got NoneType"),
    (["c"], "must be a str, got list"),
]

HUGE_INTS: list[tuple[Any, str]] = [
    (2**63, "must be between .* got 9223372036854775808"),
    (2**70, "must be between .* got 1180591620717411303424"),
    (10**5000, "must be between .* got an int of 16610 bits"),
    (-(2**63), "must be between .* got -9223372036854775808"),
    (-1, "must be between .* got -1"),
    (True, "must be .*int, got bool"),
    (1.0, "must be .*int, got float"),
    ("5", "must be .*int, got str"),
]

FORGED_CURSORS: list[Any] = [
    _b64(b"[" * 100_000),  # a RecursionError inside json.loads
    _cursor([1, "\ud800"]),  # a lone surrogate as the conversation id
    _cursor([2**63, "x"]),  # past BIGINT
    _cursor([-1, "x"]),
    _cursor([True, "x"]),  # a bool is not a timestamp
    _cursor([1, "a\x00b"]),  # NUL in the id
    _cursor([1, "x" * 300]),  # an id past the limit
    _cursor([1, 2]),
    _cursor({"at": 1, "id": "x"}),
    _cursor([1, "x", 3]),
    _cursor(None),
    "not base64 at all!",
    "",
    "A" * (1 << 20),  # huge
    _b64(b"\xff\xfe"),  # not UTF-8
    "\ud800",
    "a\x00",
    42,
]


@pytest.fixture
def alice(store: ConversationStore) -> ConversationStore:
    """A store holding alice's conversation ``c`` with two messages and a title."""
    store.append_message(conversation_id="c", role="user", content="hi", user_id="alice")
    store.append_message(
        conversation_id="c", role="assistant", content="hello", user_id="alice", message_id=MID
    )
    store.update_conversation(conversation_id="c", metadata={"title": "alice's"})
    return store


def _id(value: Any) -> str:
    """A short test id for any hostile value (pytest would print 1 MiB or fail on 10**5000)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"int{value.bit_length()}b" + ("neg" if value < 0 else "")
    text = ascii(value)
    return text if len(text) <= 24 else f"{text[:16]}..{len(text)}"


def _call(store: ConversationStore, name: str, **override: Any) -> Any:
    return getattr(store, name)(**{**CALLS[name], **override})


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_conversation_ids_are_refused(
    alice: ConversationStore, snapshot: Snapshot, name: str, value: Any, message: str
) -> None:
    before = snapshot(alice)
    with pytest.raises(MemoryValidationError, match=f"conversation_id {message}"):
        _call(alice, name, conversation_id=value)
    assert snapshot(alice) == before


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(("value", "message"), BAD_IDS[:4], ids=_id)
def test_bad_user_ids_are_refused(
    alice: ConversationStore, snapshot: Snapshot, name: str, value: Any, message: str
) -> None:
    before = snapshot(alice)
    with pytest.raises(MemoryValidationError, match=f"user_id {message}"):
        _call(alice, name, user_id=value)
    assert snapshot(alice) == before


@pytest.mark.parametrize("name", ["get_message", "update_message", "delete_message"])
@pytest.mark.parametrize(("value", "message"), BAD_IDS, ids=_id)
def test_bad_message_ids_are_refused(
    alice: ConversationStore, snapshot: Snapshot, name: str, value: Any, message: str
) -> None:
    before = snapshot(alice)
    with pytest.raises(MemoryValidationError, match=f"message_id {message}"):
        _call(alice, name, message_id=value)
    assert snapshot(alice) == before


@pytest.mark.parametrize(("value", "message"), BAD_IDS[:4], ids=_id)
def test_bad_message_cursors_are_refused(
    alice: ConversationStore, value: Any, message: str
) -> None:
    for side in ("after", "before"):
        with pytest.raises(MemoryValidationError, match=f"{side} {message}"):
            alice.get_messages(conversation_id="c", **{side: value})


def test_a_cursor_from_another_conversation_is_refused(alice: ConversationStore) -> None:
    alice.append_message(conversation_id="other", role="user", content="x", message_id="m_other")
    with pytest.raises(MemoryValidationError, match="after: no message 'm_other' in conversation"):
        alice.get_messages(conversation_id="c", after="m_other")


@pytest.mark.parametrize("cursor", FORGED_CURSORS, ids=_id)
def test_forged_list_cursors_are_refused(alice: ConversationStore, cursor: Any) -> None:
    for side in ("after", "before"):
        with pytest.raises(MemoryValidationError, match=side):
            alice.list_conversations(**{side: cursor})
        with pytest.raises(MemoryValidationError, match=side):
            alice.list_conversations(user_id="alice", **{side: cursor})


def test_a_real_cursor_still_pages(alice: ConversationStore) -> None:
    alice.append_message(conversation_id="d", role="user", content="x", user_id="alice")
    first = alice.list_conversations(limit=1)
    assert first.next_cursor is not None
    second = alice.list_conversations(limit=1, after=first.next_cursor)
    assert [m.conversation_id for m in first.items + second.items] == ["d", "c"]


@pytest.mark.parametrize(("value", "message"), HUGE_INTS, ids=_id)
def test_huge_and_wrong_integers_are_refused(
    alice: ConversationStore, value: Any, message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=f"limit {message}"):
        alice.get_messages(conversation_id="c", limit=value)
    with pytest.raises(MemoryValidationError, match=f"limit {message}"):
        alice.list_conversations(limit=value)
    for name in ("get_history", "get_contents"):  # last: 0 to MAX_INT64
        with pytest.raises(MemoryValidationError, match=f"last {message}"):
            _call(alice, name, last=value)


@pytest.mark.parametrize("name", ["get_history", "get_contents"])
def test_the_largest_last_reads_everything(alice: ConversationStore, name: str) -> None:
    assert len(_call(alice, name, last=2**63 - 1)) == 2


DEEP = nested(10_000)


@pytest.mark.parametrize(
    ("name", "override"),
    [
        ("append_message", {"content": DEEP}),
        ("append_message", {"content": "x", "metadata": {"deep": DEEP}}),
        ("append_messages", {"messages": [{"role": "user", "content": DEEP}]}),
        ("sync_messages", {"messages": [{"role": "user", "content": DEEP, "message_id": "s"}]}),
        ("sync_messages", {"metadata": {"deep": DEEP}}),
        ("update_message", {"content": DEEP}),
        ("update_message", {"metadata": {"deep": DEEP}}),
        ("update_conversation", {"metadata": {"deep": DEEP}}),
    ],
)
def test_deep_nesting_is_refused(
    alice: ConversationStore, snapshot: Snapshot, name: str, override: dict[str, Any]
) -> None:
    before = snapshot(alice)
    with pytest.raises(MemoryValidationError, match="nested deeper than 900 levels"):
        _call(alice, name, **override)
    assert snapshot(alice) == before


@pytest.mark.parametrize(
    ("name", "override", "argument"),
    [
        ("append_message", {"content": "x" * 1001}, "content"),
        ("append_message", {"content": "x", "metadata": {"m": "x" * 600}}, "metadata"),
        ("append_messages", {"messages": [{"role": "user", "content": ["x" * 1001]}]}, "content"),
        (
            "sync_messages",
            {"messages": [{"role": "user", "content": "x" * 1001, "message_id": "s"}]},
            "content",
        ),
        ("sync_messages", {"metadata": {"m": "x" * 600}}, "metadata"),
        ("update_message", {"content": {"big": "x" * 1001}}, "content"),
        ("update_conversation", {"metadata": {"m": "x" * 600}}, "metadata"),
    ],
)
def test_huge_values_are_refused_with_the_limit(
    small_store: ConversationStore,
    snapshot: Snapshot,
    name: str,
    override: dict[str, Any],
    argument: str,
) -> None:
    small_store.append_message(conversation_id="c", role="user", content="x", message_id=MID)
    before = snapshot(small_store)
    with pytest.raises(MemoryValidationError, match=rf"{argument} is \d+ bytes .* limit is \d+"):
        _call(small_store, name, **override)
    assert snapshot(small_store) == before


@pytest.mark.parametrize("text", ["nul \x00 inside", "lone \ud800 surrogate", "\udfff"])
def test_nul_and_surrogates_inside_content_round_trip(store: ConversationStore, text: str) -> None:
    """Inside content they are data, not attacks: stored and given back exactly."""
    store.append_message(conversation_id="c", role="user", content=text, metadata={"k": text})
    [message] = store.get_history(conversation_id="c")
    assert (message.content, message.metadata) == (text, {"k": text})


# -- another user's conversation ----------------------------------------------------------


@pytest.mark.parametrize("name", CALLS)
def test_another_users_conversation_is_refused(
    alice: ConversationStore, snapshot: Snapshot, name: str
) -> None:
    before = snapshot(alice)
    with pytest.raises(ConversationOwnershipError, match="'c' belongs to another user"):
        _call(alice, name, user_id="mallory")
    assert snapshot(alice) == before


@pytest.mark.parametrize("name", READS_AND_DELETES)
def test_the_owner_passes_the_same_check(alice: ConversationStore, name: str) -> None:
    _call(alice, name, user_id="alice")


@pytest.mark.parametrize("name", READS_AND_DELETES)
def test_an_unowned_conversation_is_open_to_every_user(store: ConversationStore, name: str) -> None:
    """As on appends: ``user_id`` guards owned conversations; an unowned one is shared."""
    store.append_message(conversation_id="c", role="user", content="x", message_id=MID)
    _call(store, name, user_id="anyone")


@pytest.mark.parametrize("name", READS_AND_DELETES)
def test_a_missing_conversation_reads_as_empty_for_any_user(
    store: ConversationStore, name: str
) -> None:
    if name == "update_message":
        return  # a missing message is MessageNotFoundError, with or without a user
    assert _call(store, name, user_id="anyone") in (None, [])


def test_listing_never_shows_another_users_rows(alice: ConversationStore) -> None:
    alice.append_message(conversation_id="m", role="user", content="x", user_id="mallory")
    assert [c.conversation_id for c in alice.list_conversations(user_id="mallory").items] == ["m"]
    assert alice.delete_user_data(user_id="mallory") == 1
    assert [c.conversation_id for c in alice.list_conversations().items] == ["c"]


@pytest.mark.anyio
async def test_the_async_store_enforces_the_same_owner(alice: ConversationStore) -> None:
    astore = AsyncConversationStore(sync=alice)
    with pytest.raises(ConversationOwnershipError):
        await astore.get_contents(conversation_id="c", user_id="mallory")
    with pytest.raises(ConversationOwnershipError):
        await astore.clear_messages(conversation_id="c", user_id="mallory")
    assert await astore.get_contents(conversation_id="c", user_id="alice") == ["hi", "hello"]


# -- a strict store: nobody's conversation is not everybody's -------------------------------


@pytest.mark.parametrize("name", CALLS)
def test_a_strict_store_refuses_an_unowned_conversation(
    store: ConversationStore, snapshot: Snapshot, name: str
) -> None:
    store.append_message(conversation_id="c", role="user", content="x", message_id=MID)
    strict = store.with_strict_ownership()
    before = snapshot(store)
    with pytest.raises(ConversationOwnershipError, match="'c' belongs to nobody"):
        _call(strict, name, user_id="anyone")
    assert snapshot(store) == before
    _call(strict, name)  # without a user_id (an agent's own call) nothing is scoped


@pytest.mark.parametrize("name", CALLS)
def test_a_strict_store_lets_the_owner_through(alice: ConversationStore, name: str) -> None:
    strict = alice.with_strict_ownership()
    _call(strict, name, user_id="alice")
    if name not in READS_AND_DELETES:
        with pytest.raises(ConversationOwnershipError):
            _call(strict, name, user_id="mallory")


def test_a_strict_store_creates_conversations_as_the_users(store: ConversationStore) -> None:
    strict = store.with_strict_ownership()
    strict.append_message(conversation_id="new", role="user", content="x", user_id="bob")
    meta = store.get_conversation(conversation_id="new")
    assert meta is not None and meta.user_id == "bob"
    assert [c.conversation_id for c in strict.list_conversations(user_id="bob").items] == ["new"]
