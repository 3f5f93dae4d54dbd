"""sync_messages (a conversation made equal to a list, writing what differs), conversations
managed by a component (as_component, ConversationManagedError) and the components' delete
hooks, on every backend."""

from __future__ import annotations

from typing import Any

import convostore.engine
import pytest
from convostore import (
    AsyncConversationStore,
    ConflictError,
    ConversationExistsError,
    ConversationManagedError,
    ConversationOwnershipError,
    ConversationStore,
    ConvostoreError,
    Limits,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MessageIdConflictError,
    MessageInput,
)
from convostore.spi import Component, StartedSync, Table, Tx

Snapshot = Any


def msg(mid: str, text: str | None = None, role: str = "user") -> MessageInput:
    return {"role": role, "content": text or f"text of {mid}", "message_id": mid}  # type: ignore[typeddict-item]


def ids(store: ConversationStore, cid: str = "c") -> list[str]:
    return [m.message_id for m in store.get_history(conversation_id=cid)]


def feed(store: ConversationStore, cid: str, after: int) -> list[tuple[str, str | None]]:
    return [
        (c.kind, c.message_id) for c in store.get_changes(conversation_id=cid, after=after).items
    ]


def test_a_whole_list_makes_the_conversation(store: ConversationStore) -> None:
    meta = store.sync_messages(
        conversation_id="c",
        messages=[msg("a"), msg("b", role="assistant")],
        user_id="alice",
        metadata={"title": "T"},
        at=1_000,
    )
    assert (meta.message_count, meta.user_id, meta.metadata) == (2, "alice", {"title": "T"})
    assert (meta.created_at, meta.last_message_at) == (1_000, 1_000)
    history = store.get_history(conversation_id="c")
    assert [(m.message_id, m.role, m.content, m.created_at) for m in history] == [
        ("a", "user", "text of a", 1_000),
        ("b", "assistant", "text of b", 1_000),
    ]
    assert feed(store, "c", 0) == [
        ("message.created", "a"),
        ("message.created", "b"),
        ("conversation.updated", None),
    ]


def test_the_same_list_again_writes_nothing(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")], at=1_000)
    cursor = store.get_changes(conversation_id="c").cursor
    meta = store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")], at=2_000)
    assert meta.last_message_at == 1_000
    assert feed(store, "c", cursor) == []


def test_a_tail_after_a_kept_message(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b"), msg("c")], at=1)
    cursor = store.get_changes(conversation_id="c").cursor
    meta = store.sync_messages(
        conversation_id="c", messages=[msg("c", "edited"), msg("d")], after="b", kept=2, at=5
    )
    assert ids(store) == ["a", "b", "c", "d"]
    assert meta.last_message_at == 5
    edited = store.get_message(conversation_id="c", message_id="c")
    assert edited is not None
    assert (edited.content, edited.created_at, edited.updated_at) == ("edited", 1, 5)
    assert feed(store, "c", cursor) == [("message.updated", "c"), ("message.created", "d")]


def test_removals_keep_the_messages_around_them(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg(x) for x in "abcde"], at=1)
    cursor = store.get_changes(conversation_id="c").cursor
    store.sync_messages(conversation_id="c", messages=[msg(x) for x in "acef"], at=9)
    history = store.get_history(conversation_id="c")
    assert [(m.message_id, m.created_at) for m in history] == [
        ("a", 1),
        ("c", 1),
        ("e", 1),
        ("f", 9),
    ]
    assert feed(store, "c", cursor) == [
        ("message.deleted", "b"),
        ("message.deleted", "d"),
        ("message.created", "f"),
    ]


def test_an_insertion_rewrites_from_there(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg(x) for x in "abc"], at=1)
    cursor = store.get_changes(conversation_id="c").cursor
    store.sync_messages(conversation_id="c", messages=[msg(x) for x in "axcb"], at=2)
    assert ids(store) == ["a", "x", "c", "b"]
    assert feed(store, "c", cursor) == [
        ("message.deleted", "b"),
        ("message.deleted", "c"),
        ("message.created", "x"),
        ("message.created", "c"),
        ("message.created", "b"),
    ]


def test_a_role_change_replaces_the_message(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")])
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b", role="assistant")])
    assert [m.role for m in store.get_history(conversation_id="c")] == ["user", "assistant"]


def test_an_empty_list_empties_the_conversation(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")])
    meta = store.sync_messages(conversation_id="c", messages=[])
    assert (meta.message_count, ids(store)) == (0, [])


@pytest.mark.parametrize(
    ("after", "kept", "match"),
    [
        ("zz", 2, "after: no message 'zz' in conversation 'c'"),
        ("b", 1, "kept: conversation 'c' holds 2 messages up to 'b', not 1"),
        ("b", 3, "kept: conversation 'c' holds 2 messages up to 'b', not 3"),
    ],
)
def test_a_wrong_belief_about_the_prefix_writes_nothing(
    store: ConversationStore, snapshot: Snapshot, after: str, kept: int, match: str
) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b"), msg("c")])
    before = snapshot(store)
    with pytest.raises(ConflictError, match=match):
        store.sync_messages(conversation_id="c", messages=[msg("d")], after=after, kept=kept)
    assert snapshot(store) == before


def test_a_tail_reusing_a_kept_id_is_refused(store: ConversationStore, snapshot: Snapshot) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")])
    before = snapshot(store)
    with pytest.raises(MessageIdConflictError, match="'a' is already used in conversation 'c'"):
        store.sync_messages(conversation_id="c", messages=[msg("a")], after="b", kept=2)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "user", "content": "x"}], r"messages\[0\]\.message_id is required"),
        ([msg("a"), {"role": "user", "content": "x"}], r"messages\[1\]\.message_id is required"),
        ([msg("a"), msg("a")], "two messages have the same message_id"),
        ([msg("a"), {"role": "bot", "content": "x", "message_id": "b"}], r"messages\[1\]\.role"),
        ([msg("a\x00")], r"messages\[0\]\.message_id must not contain NUL"),
        ("not a list", "messages must be a list"),
        ({"role": "user"}, "messages must be a list"),
    ],
)
def test_bad_lists_are_refused(
    store: ConversationStore, snapshot: Snapshot, messages: Any, match: str
) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("z")])
    before = snapshot(store)
    with pytest.raises(MemoryValidationError, match=match):
        store.sync_messages(conversation_id="c", messages=messages)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("argument", "value", "match"),
    [
        ("kept", 1, "kept goes with after"),
        ("kept", -1, "kept must be between"),
        ("kept", 2**64, "kept must be between"),
        ("kept", True, "kept must be .*int, got bool"),
        ("at", -5, "at must be between"),
        ("at", 2**63, "at must be between"),
        ("at", "now", "at must be .*int, got str"),
        ("after", "a\x00", "after must not contain NUL"),
        ("after", "\ud800", "after is not valid UTF-8"),
        ("metadata", ["x"], "metadata must be a dict"),
        ("metadata", {"managedBy": {"component": "x"}}, "'managedBy' is set by the component"),
    ],
)
def test_bad_arguments_are_refused(
    store: ConversationStore, snapshot: Snapshot, argument: str, value: Any, match: str
) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("z")])
    before = snapshot(store)
    anchor = {"after": "z"} if argument == "kept" and "goes with" not in match else {}
    with pytest.raises(MemoryValidationError, match=match):
        store.sync_messages(conversation_id="c", messages=[msg("y")], **{argument: value, **anchor})
    assert snapshot(store) == before


def test_the_quota_counts_what_the_list_leaves(backend_url: str) -> None:
    with ConversationStore(backend_url, limits=Limits(max_messages_per_conversation=3)) as small:
        small.sync_messages(conversation_id="c", messages=[msg(x) for x in "abc"])
        small.sync_messages(conversation_id="c", messages=[msg(x) for x in "bcd"])  # 3 again
        with pytest.raises(MemoryQuotaExceededError, match="would hold 4 messages"):
            small.sync_messages(conversation_id="c", messages=[msg(x) for x in "bcde"])
        assert ids(small) == ["b", "c", "d"]


def test_another_users_conversation_is_refused(store: ConversationStore) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a")], user_id="alice")
    with pytest.raises(ConversationOwnershipError):
        store.sync_messages(conversation_id="c", messages=[], user_id="mallory")
    assert ids(store) == ["a"]


def _own_row(tx: Tx) -> None:
    tx.execute("CREATE TABLE IF NOT EXISTS test_own (k TEXT PRIMARY KEY)")
    tx.execute("INSERT INTO test_own VALUES ('mine')")


def test_inside_a_callers_transaction(store: ConversationStore) -> None:
    def write(tx: Tx) -> None:
        _own_row(tx)
        store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")], tx=tx)

    store.backend.write(write)
    assert ids(store) == ["a", "b"]
    assert store.backend.read(lambda tx: tx.execute("SELECT k FROM test_own")) == [("mine",)]


@pytest.mark.parametrize(
    ("existing", "call", "error"),
    [
        (None, {"after": "a", "kept": 1}, ConflictError),  # missing: not created for that
        ("alice", {"user_id": "mallory"}, ConversationOwnershipError),
        ("alice", {"after": "zz", "kept": 1}, ConflictError),
        ("alice", {"after": "a", "kept": 5}, ConflictError),
        ("alice", {"messages": [msg("a")], "after": "b", "kept": 2}, MessageIdConflictError),
    ],
)
def test_errors_inside_a_transaction_come_before_any_write(
    store: ConversationStore,
    snapshot: Snapshot,
    existing: str | None,
    call: dict[str, Any],
    error: type[Exception],
) -> None:
    """The caller catches the error and commits its own rows: nothing of the conversation."""
    if existing is not None:
        store.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")], user_id=existing)
    before = snapshot(store)

    def write(tx: Tx) -> None:
        _own_row(tx)
        with pytest.raises(error):
            store.sync_messages(conversation_id="c", **{"messages": [msg("d")], **call}, tx=tx)

    store.backend.write(write)
    assert snapshot(store) == before
    assert store.backend.read(lambda tx: tx.execute("SELECT k FROM test_own")) == [("mine",)]


def test_a_quota_error_inside_a_transaction_creates_nothing(backend_url: str) -> None:
    with ConversationStore(backend_url, limits=Limits(max_messages_per_conversation=1)) as small:

        def write(tx: Tx) -> None:
            with pytest.raises(MemoryQuotaExceededError):
                small.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")], tx=tx)

        small.backend.write(write)
        assert small.get_conversation(conversation_id="c") is None


@pytest.mark.anyio
async def test_the_async_facade(store: ConversationStore) -> None:
    astore = AsyncConversationStore(sync=store)
    await astore.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")])
    await astore.sync_messages(conversation_id="c", messages=[msg("c")], after="b", kept=2)
    assert ids(store) == ["a", "b", "c"]


# -- managed conversations ----------------------------------------------------------------------


@pytest.fixture
def managed(store: ConversationStore) -> ConversationStore:
    """``c`` managed by the component ``thing``, owned by alice; the component's store."""
    thing = store.as_component("thing")
    thing.sync_messages(
        conversation_id="c",
        messages=[msg("a"), msg("b", role="assistant")],
        user_id="alice",
        metadata={"managedBy": {"key": "k1"}},
    )
    return thing


MESSAGE_WRITES: dict[str, dict[str, Any]] = {
    "append_message": {"role": "user", "content": "x"},
    "append_messages": {"messages": [{"role": "user", "content": "x"}]},
    "pop_message": {},
    "update_message": {"message_id": "a", "content": "y"},
    "delete_message": {"message_id": "a"},
    "clear_messages": {},
    "sync_messages": {"messages": []},
}


def test_a_component_marks_what_it_manages(
    store: ConversationStore, managed: ConversationStore
) -> None:
    meta = store.get_conversation(conversation_id="c")
    assert meta is not None
    assert meta.metadata == {"managedBy": {"key": "k1", "component": "thing"}}
    assert managed.component == "thing" and store.component is None


@pytest.mark.parametrize("name", MESSAGE_WRITES)
def test_other_writers_of_its_messages_are_refused(
    store: ConversationStore, managed: ConversationStore, snapshot: Snapshot, name: str
) -> None:
    before = snapshot(store)
    for writer in (store, store.as_component("other")):
        with pytest.raises(ConversationManagedError, match="'c' is managed by 'thing'"):
            getattr(writer, name)(conversation_id="c", **MESSAGE_WRITES[name])
    assert snapshot(store) == before


@pytest.mark.parametrize("name", MESSAGE_WRITES)
def test_the_component_itself_writes(managed: ConversationStore, name: str) -> None:
    getattr(managed, name)(conversation_id="c", **MESSAGE_WRITES[name])


def test_metadata_stays_open_but_the_mark_is_the_components(
    store: ConversationStore, managed: ConversationStore, snapshot: Snapshot
) -> None:
    meta = store.update_conversation(conversation_id="c", metadata={"title": "By hand"})
    assert meta.metadata == {"managedBy": {"key": "k1", "component": "thing"}, "title": "By hand"}
    before = snapshot(store)
    for patch in ({"managedBy": None}, {"managedBy": {"component": "mine"}}):
        with pytest.raises(MemoryValidationError, match="'managedBy' is set by the component"):
            store.update_conversation(conversation_id="c", metadata=patch)
        with pytest.raises(MemoryValidationError, match="'managedBy' is set by the component"):
            store.update_conversation(conversation_id="free", metadata=patch)
    assert snapshot(store) == before


def test_a_component_adopts_only_an_empty_conversation(store: ConversationStore) -> None:
    store.update_conversation(conversation_id="titled", metadata={"title": "Made first"})
    thing = store.as_component("thing")
    meta = thing.sync_messages(conversation_id="titled", messages=[msg("a")])
    assert meta.metadata == {"title": "Made first", "managedBy": {"component": "thing"}}
    store.append_message(conversation_id="used", role="user", content="x")
    with pytest.raises(ConversationExistsError, match="holds messages 'thing' does not manage"):
        thing.sync_messages(conversation_id="used", messages=[msg("a")])
    assert len(store.get_history(conversation_id="used")) == 1


def test_a_fork_of_a_managed_conversation_is_free(
    store: ConversationStore, managed: ConversationStore
) -> None:
    fork = store.fork_conversation(conversation_id="c", new_conversation_id="mine")
    assert fork.metadata == {"forkedFrom": {"conversationId": "c", "messageId": None}}
    store.append_message(conversation_id="mine", role="user", content="now mine")
    assert ids(store, "mine")[:2] == ["a", "b"] and ids(store) == ["a", "b"]
    with pytest.raises(MemoryValidationError, match="'managedBy' is set by the component"):
        store.fork_conversation(
            conversation_id="c", new_conversation_id="x", metadata={"managedBy": {}}
        )


# -- delete hooks --------------------------------------------------------------------------------

HOOK_TABLE = "test_thing_data"


def _hook(tx: Tx, conversations: list[Any]) -> None:
    keys = [m.metadata["managedBy"]["key"] for m in conversations]
    tx.executemany(f"DELETE FROM {HOOK_TABLE} WHERE key = ?", [[k] for k in keys])


THING = Component(
    name="thing",
    steps=[[f"CREATE TABLE {HOOK_TABLE} (key TEXT PRIMARY KEY, value TEXT)"]],
    tables=(Table(HOOK_TABLE, ("key",)),),
    on_delete=_hook,
)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is when a package registers ``THING`` (entry points are per install)."""
    real = convostore.engine.component_named
    monkeypatch.setattr(
        convostore.engine, "component_named", lambda name: THING if name == "thing" else real(name)
    )


def _thing_keys(store: ConversationStore) -> list[str]:
    rows = store.backend.read(lambda tx: tx.execute(f"SELECT key FROM {HOOK_TABLE} ORDER BY key"))
    return [r[0] for r in rows]


@pytest.fixture
def things(store: ConversationStore, registry: None) -> ConversationStore:
    """Three conversations ``thing`` manages (two of alice's), each with a row of its own."""
    store.backend.migrate(THING)
    thing = store.as_component("thing")
    for cid, user in (("c1", "alice"), ("c2", "alice"), ("c3", "bob")):
        thing.sync_messages(
            conversation_id=cid,
            messages=[msg("a")],
            user_id=user,
            metadata={"managedBy": {"key": cid}},
        )
        store.backend.write(
            lambda tx, cid=cid: tx.execute(f"INSERT INTO {HOOK_TABLE} VALUES (?, 'v')", [cid])
        )
    store.append_message(conversation_id="plain", role="user", content="x", user_id="alice")
    return store


def test_delete_conversation_deletes_the_components_data(things: ConversationStore) -> None:
    things.delete_conversation(conversation_id="c1")
    assert _thing_keys(things) == ["c2", "c3"]
    things.delete_conversation(conversation_id="plain")
    assert _thing_keys(things) == ["c2", "c3"]


def test_delete_conversations_and_delete_user_data_too(things: ConversationStore) -> None:
    assert things.delete_conversations(conversation_ids=["c3", "plain"]) == 2
    assert _thing_keys(things) == ["c1", "c2"]
    assert things.delete_user_data(user_id="alice") == 2
    assert _thing_keys(things) == []
    assert things.list_conversations().items == []


def test_a_failing_hook_deletes_nothing(
    things: ConversationStore, snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(tx: Tx, conversations: list[Any]) -> None:
        raise RuntimeError("the component failed")

    failing = Component(name="thing", steps=THING.steps, tables=THING.tables, on_delete=broken)
    monkeypatch.setattr(convostore.engine, "component_named", lambda name: failing)
    before = snapshot(things)
    with pytest.raises(RuntimeError, match="the component failed"):
        things.delete_conversation(conversation_id="c1")
    with pytest.raises(RuntimeError, match="the component failed"):
        things.delete_user_data(user_id="bob")
    assert snapshot(things) == before and _thing_keys(things) == ["c1", "c2", "c3"]


def test_no_hook_runs_where_the_component_has_no_tables(
    store: ConversationStore, registry: None
) -> None:
    """A database where the component never migrated (its package is installed elsewhere)."""
    store.as_component("thing").sync_messages(conversation_id="c", messages=[msg("a")])
    store.delete_conversation(conversation_id="c")
    assert store.get_conversation(conversation_id="c") is None


def test_an_unregistered_manager_is_deleted_alone(store: ConversationStore) -> None:
    store.as_component("gone-package").sync_messages(conversation_id="c", messages=[msg("a")])
    store.delete_conversation(conversation_id="c")
    assert store.get_conversation(conversation_id="c") is None


def test_start_sync_messages_sends_its_read_with_the_callers_statements(
    store: ConversationStore,
) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a")])

    def write(tx: Tx) -> StartedSync:
        started = store.start_sync_messages(
            tx=tx, conversation_id="c", messages=[msg("b")], after="a", kept=1
        )
        _own_row(tx)  # the caller's statements come between
        started.finish()
        return started

    store.backend.write(write).confirm()
    assert ids(store) == ["a", "b"]


def _started_sync(store: ConversationStore, **arguments: Any) -> None:
    """What an adapter does: the sync started in its transaction, its own row written between,
    the sync finished (an error it raises is kept for after the commit), the commit, then
    ``confirm()``; where that raises ``ConflictError``, the same sync in a transaction of its
    own."""

    def write(tx: Tx) -> StartedSync | ConvostoreError:
        started = store.start_sync_messages(tx=tx, **arguments)
        (count,) = tx.execute("SELECT count(*) FROM test_own")[0]
        tx.execute("INSERT INTO test_own VALUES (?)", [f"row {count}"])
        try:
            started.finish()
        except ConvostoreError as exc:
            return exc
        return started

    started = store.backend.write(write)
    if isinstance(started, ConvostoreError):
        raise started
    try:
        started.confirm()
    except ConflictError:
        store.sync_messages(**arguments)


def mine(store: ConversationStore) -> list[str]:
    return [k for (k,) in store.backend.read(lambda tx: tx.execute("SELECT k FROM test_own"))]


def as_adapter(store: ConversationStore) -> ConversationStore:
    """The store as a component, with a table of the component's own."""
    store.backend.write(
        lambda tx: tx.execute("CREATE TABLE IF NOT EXISTS test_own (k TEXT PRIMARY KEY)")
    )
    return store.as_component("test-own")


@pytest.fixture
def adapter(store: ConversationStore) -> ConversationStore:
    return as_adapter(store)


def test_appends_in_a_callers_transaction_commit_with_its_rows(
    adapter: ConversationStore,
) -> None:
    adapter.sync_messages(conversation_id="c", messages=[msg("a")])
    for k, mid in enumerate(["b", "c", "d"]):
        _started_sync(
            adapter, conversation_id="c", messages=[msg(mid)], after=chr(97 + k), kept=k + 1
        )
    assert (ids(adapter), mine(adapter)) == (["a", "b", "c", "d"], ["row 0", "row 1", "row 2"])
    conversation = adapter.get_conversation(conversation_id="c")
    assert conversation is not None and conversation.message_count == 4


def test_a_sync_after_another_writers_change_ends_as_the_same_sync_alone(
    shared_url: str,
) -> None:
    """The store remembers the conversation as it wrote it; another store's write makes that
    stale: the adapter's rows commit, and the conversation ends as ``sync_messages`` alone
    makes it (on PostgreSQL ``confirm()`` asks for that sync; elsewhere it was that sync)."""
    with ConversationStore(shared_url) as store, ConversationStore(shared_url) as other:
        adapter, theirs = as_adapter(store), other.as_component("test-own")
        adapter.sync_messages(conversation_id="c", messages=[msg("a")])
        theirs.sync_messages(conversation_id="c", messages=[msg("x")], after="a", kept=1)
        _started_sync(adapter, conversation_id="c", messages=[msg("b")], after="a", kept=1)
        assert ids(adapter) == ["a", "b"]
        theirs.sync_messages(conversation_id="c", messages=[msg("a"), msg("b"), msg("y")])
        _started_sync(adapter, conversation_id="c", messages=[msg("c")], after="b", kept=2)
        assert ids(adapter) == ["a", "b", "c"]
        theirs.sync_messages(conversation_id="c", messages=[msg(m) for m in "azbc"])
        with pytest.raises(ConflictError, match="holds 4 messages up to 'c', not 3"):
            _started_sync(adapter, conversation_id="c", messages=[msg("d")], after="c", kept=3)
        assert ids(adapter) == ["a", "z", "b", "c"]
        _started_sync(adapter, conversation_id="c", messages=[msg("d")], after="c", kept=4)
        assert ids(adapter) == ["a", "z", "b", "c", "d"]
        assert mine(adapter) == ["row 0", "row 1", "row 2", "row 3"]


def test_an_appended_id_the_conversation_holds_is_refused_and_the_callers_rows_commit(
    adapter: ConversationStore, snapshot: Snapshot
) -> None:
    adapter.sync_messages(conversation_id="c", messages=[msg("a"), msg("b")])
    before = snapshot(adapter)
    with pytest.raises(MessageIdConflictError, match="'a' is already used"):
        _started_sync(adapter, conversation_id="c", messages=[msg("a", "again")], after="b", kept=2)
    assert mine(adapter) == ["row 0"]
    assert snapshot(adapter) == before


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"conversation_id": "a\x00"}, "conversation_id must not contain NUL"),
        ({"messages": [{"role": "user", "content": "x"}]}, r"messages\[0\]\.message_id"),
        ({"kept": 1}, "kept goes with after"),
        ({"at": -1}, "at must be between"),
    ],
)
def test_start_sync_messages_refuses_bad_input_before_sending_anything(
    store: ConversationStore, snapshot: Snapshot, arguments: dict[str, Any], match: str
) -> None:
    store.sync_messages(conversation_id="c", messages=[msg("a")])
    before = snapshot(store)

    def write(tx: Tx) -> None:
        with pytest.raises(MemoryValidationError, match=match):
            store.start_sync_messages(
                tx=tx, **{"conversation_id": "c", "messages": [msg("b")], **arguments}
            )
        _own_row(tx)

    store.backend.write(write)
    assert snapshot(store) == before
