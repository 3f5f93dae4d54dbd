"""Memory stores: versioned entries by path, optimistic concurrency, redaction, counters,
ownership and attachment to conversations, on every backend."""

from __future__ import annotations

import pytest
from convostore import (
    MEMORY_STORES_KEY,
    AsyncConversationStore,
    ConversationStore,
    Limits,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryStoreNotFoundError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
    MemoryVersionConflictError,
    MemoryVersionNotFoundError,
    amemory_context,
    memory_context,
)


@pytest.fixture
def sid(store: ConversationStore) -> str:
    return store.create_memory_store("project", description="notes of a project").memory_store_id


def test_a_new_store_is_empty_and_carries_what_it_was_given(store: ConversationStore) -> None:
    made = store.create_memory_store(
        "Résumé notes", description="d", metadata={"team": "a"}, user_id="alice"
    )
    assert made.memory_store_id.startswith("memstore_")
    assert (made.name, made.description, made.metadata, made.user_id) == (
        "Résumé notes",
        "d",
        {"team": "a"},
        "alice",
    )
    assert (made.entry_count, made.total_size) == (0, 0)
    assert made.created_at == made.updated_at
    assert store.get_memory_store(made.memory_store_id) == made
    assert store.get_memory_store("memstore_nope") is None
    dumped = made.model_dump(by_alias=True)
    assert {"memoryStoreId", "entryCount", "totalSize", "createdAt", "userId"} <= set(dumped)


def test_memory_stores_are_listed_oldest_first_a_page_at_a_time(store: ConversationStore) -> None:
    made = [
        store.create_memory_store(f"s{i}", user_id="alice" if i % 2 else "bob") for i in range(5)
    ]
    seen, cursor = [], None
    while True:
        page = store.list_memory_stores(limit=2, after=cursor)
        seen += [s.memory_store_id for s in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(s.memory_store_id for s in made)
    alices = store.list_memory_stores(user_id="alice")
    assert [s.name for s in alices.items] == ["s1", "s3"] and alices.next_cursor is None


def test_create_then_read_by_id_and_by_path(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "notes/2026/05/daily.md", "# Daily\nshipped ✓")
    assert entry.entry_id.startswith("mem_")
    assert (entry.path, entry.version, entry.content, entry.redacted) == (
        "notes/2026/05/daily.md",
        1,
        "# Daily\nshipped ✓",
        False,
    )
    assert entry.size == len("# Daily\nshipped ✓".encode())
    assert entry.created_at == entry.updated_at
    assert store.get_memory(sid, entry.entry_id) == entry
    assert store.get_memory_by_path(sid, "notes/2026/05/daily.md") == entry
    assert store.get_memory(sid, "mem_nope") is None
    assert store.get_memory_by_path(sid, "notes/other.md") is None
    assert store.get_memory("memstore_nope", entry.entry_id) is None


def test_content_round_trips_exactly(store: ConversationStore, sid: str) -> None:
    for i, text in enumerate(["", "a\x00b", "emoji 🧠 and CJK 記憶", "x" * (5 * 1024 * 1024)]):
        entry = store.create_memory(sid, f"f{i}.txt", text)
        got = store.get_memory(sid, entry.entry_id)
        assert got is not None and got.content == text and got.size == len(text.encode())


def test_a_live_path_is_taken_until_its_entry_is_deleted(
    store: ConversationStore, sid: str
) -> None:
    first = store.create_memory(sid, "a.md", "one")
    with pytest.raises(MemoryPathConflictError, match=r"'a\.md' is already a live entry"):
        store.create_memory(sid, "a.md", "two")
    store.delete_memory(sid, first.entry_id)
    second = store.create_memory(sid, "a.md", "two")
    assert second.entry_id != first.entry_id and second.version == 1


def test_entries_are_listed_by_path_without_content(store: ConversationStore, sid: str) -> None:
    paths = ["b/z.md", "a.md", "b/a.md", "é.md", "b.md", "b/a/deep.md", "Z.md"]
    for p in paths:
        store.create_memory(sid, p, f"content of {p}")
    seen, cursor = [], None
    while True:
        page = store.list_memories(sid, limit=3, after=cursor)
        assert all(e.content is None for e in page.items)
        seen += [e.path for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(paths)  # code point order on every backend
    under_b = store.list_memories(sid, path_prefix="b/")
    assert [e.path for e in under_b.items] == ["b/a.md", "b/a/deep.md", "b/z.md"]
    assert store.list_memories(sid, path_prefix="nothing/").items == []


def test_update_needs_the_current_version(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "a.md", "v1")
    second = store.update_memory(sid, entry.entry_id, "v2", 1)
    assert (second.version, second.content, second.entry_id) == (2, "v2", entry.entry_id)
    with pytest.raises(MemoryVersionConflictError, match="at version 2, not version 1") as caught:
        store.update_memory(sid, entry.entry_id, "stale", 1)
    assert caught.value.current_version == 2
    got = store.get_memory(sid, entry.entry_id)
    assert got is not None and (got.version, got.content) == (2, "v2")
    assert got.created_at == entry.created_at


def test_an_update_is_judged_on_the_rows_as_they_are_now(shared_url: str) -> None:
    """A store updates an entry it wrote last without a locking read, on the rows as it wrote
    them; whatever another writer did since (an update, a write to another entry, a
    redaction, a deletion) is seen and judged as it is in the database."""
    with ConversationStore(shared_url) as ours, ConversationStore(shared_url) as theirs:
        sid = ours.create_memory_store("s").memory_store_id
        a = ours.create_memory(sid, "a.md", "a1")
        b = ours.create_memory(sid, "b.md", "b1")
        assert ours.update_memory(sid, a.entry_id, "a2", 1).version == 2  # as written last
        theirs.update_memory(sid, a.entry_id, "theirs", 2)
        with pytest.raises(MemoryVersionConflictError) as caught:
            ours.update_memory(sid, a.entry_id, "stale", 2)
        assert caught.value.current_version == 3
        assert ours.update_memory(sid, a.entry_id, "a4", 3).version == 4
        theirs.update_memory(sid, b.entry_id, "b2", 1)  # the store's counters moved
        assert ours.update_memory(sid, a.entry_id, "a5", 4).content == "a5"
        [*_, current] = ours.list_memory_versions(sid, entry_id=a.entry_id).items
        theirs.redact_memory_version(sid, current.version_id)
        assert ours.update_memory(sid, a.entry_id, "a6", 5).content == "a6"
        assert ours.get_memory_version(sid, current.version_id).redacted  # type: ignore[union-attr]
        meta = theirs.get_memory_store(sid)
        assert meta is not None and (meta.entry_count, meta.total_size) == (2, 4)
        theirs.delete_memory(sid, a.entry_id)
        theirs.create_memory(sid, "a.md", "a again")
        with pytest.raises(MemoryEntryNotFoundError):
            ours.update_memory(sid, a.entry_id, "gone", 6)
        history = theirs.list_memory_versions(sid, entry_id=a.entry_id).items
        assert [(v.version, v.operation) for v in history] == [
            (1, "create"),
            *((n, "update") for n in range(2, 7)),
            (7, "delete"),
        ]
        theirs.delete_memory_store(sid)
        with pytest.raises(MemoryStoreNotFoundError):
            ours.update_memory(sid, b.entry_id, "gone", 2)


def test_a_create_is_judged_on_the_store_as_it_is_now(shared_url: str) -> None:
    """A create in a store this one wrote last skips the locking read; a path taken, a quota
    reached or a store deleted by another writer since is still refused."""
    limits = Limits(max_memory_entries_per_store=3)
    with (
        ConversationStore(shared_url, limits=limits) as ours,
        ConversationStore(shared_url, limits=limits) as theirs,
    ):
        sid = ours.create_memory_store("s").memory_store_id
        ours.create_memory(sid, "a.md", "a")
        theirs.create_memory(sid, "b.md", "theirs")
        with pytest.raises(MemoryPathConflictError):
            ours.create_memory(sid, "b.md", "ours")
        ours.create_memory(sid, "c.md", "c")  # the third: as the store is now
        theirs.delete_memory(sid, ours.get_memory_by_path(sid, "a.md").entry_id)  # type: ignore[union-attr]
        assert ours.create_memory(sid, "a.md", "again").version == 1
        theirs.delete_memory(sid, theirs.get_memory_by_path(sid, "b.md").entry_id)  # type: ignore[union-attr]
        theirs.create_memory(sid, "d.md", "theirs")
        with pytest.raises(MemoryQuotaExceededError):
            ours.create_memory(sid, "e.md", "one too many")
        meta = ours.get_memory_store(sid)
        assert meta is not None and (meta.entry_count, meta.total_size) == (3, 12)
        theirs.delete_memory_store(sid)
        with pytest.raises(MemoryStoreNotFoundError):
            ours.create_memory(sid, "f.md", "gone")


def test_a_move_keeps_the_entry_and_its_history(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "draft.md", "text")
    store.create_memory(sid, "taken.md", "other")
    with pytest.raises(MemoryPathConflictError):
        store.update_memory(sid, entry.entry_id, None, 1, path="taken.md")
    moved = store.update_memory(sid, entry.entry_id, None, 1, path="final/doc.md")
    assert (moved.entry_id, moved.path, moved.content, moved.version) == (
        entry.entry_id,
        "final/doc.md",
        "text",
        2,
    )
    assert store.get_memory_by_path(sid, "draft.md") is None
    store.create_memory(sid, "draft.md", "the old path is free")
    history = store.list_memory_versions(sid, entry_id=entry.entry_id).items
    assert [(v.version, v.operation, v.path) for v in history] == [
        (1, "create", "draft.md"),
        (2, "update", "final/doc.md"),
    ]
    with pytest.raises(MemoryValidationError, match="needs content, path or both"):
        store.update_memory(sid, entry.entry_id, None, 2)


def test_delete_writes_a_version_and_keeps_the_history(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "a.md", "v1")
    store.update_memory(sid, entry.entry_id, "v2", 1)
    with pytest.raises(MemoryVersionConflictError) as caught:
        store.delete_memory(sid, entry.entry_id, version=1)
    assert caught.value.current_version == 2
    gone = store.delete_memory(sid, entry.entry_id, version=2)
    assert (gone.operation, gone.version, gone.path, gone.size, gone.content) == (
        "delete",
        3,
        "a.md",
        0,
        None,
    )
    assert store.get_memory(sid, entry.entry_id) is None
    assert store.delete_memory(sid, entry.entry_id) == gone  # a retry gets the same answer
    with pytest.raises(MemoryEntryNotFoundError):
        store.delete_memory(sid, entry.entry_id, version=3)
    with pytest.raises(MemoryEntryNotFoundError):
        store.update_memory(sid, entry.entry_id, "again", 3)
    with pytest.raises(MemoryEntryNotFoundError):
        store.delete_memory(sid, "mem_never")
    versions = store.list_memory_versions(sid, entry_id=entry.entry_id).items
    assert [(v.version, v.operation) for v in versions] == [
        (1, "create"),
        (2, "update"),
        (3, "delete"),
    ]
    first = store.get_memory_version(sid, versions[0].version_id)
    assert first is not None and first.content == "v1"


def test_versions_page_through_the_whole_store(store: ConversationStore, sid: str) -> None:
    a = store.create_memory(sid, "a.md", "a1")
    b = store.create_memory(sid, "b.md", "b1")
    store.update_memory(sid, a.entry_id, "a2", 1)
    store.delete_memory(sid, b.entry_id)
    seen, cursor = [], None
    while True:
        page = store.list_memory_versions(sid, limit=3, after=cursor)
        assert all(v.content is None for v in page.items)
        seen += [(v.entry_id, v.version, v.operation) for v in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [
        (a.entry_id, 1, "create"),
        (b.entry_id, 1, "create"),
        (a.entry_id, 2, "update"),
        (b.entry_id, 2, "delete"),
    ]
    with pytest.raises(MemoryValidationError, match="after: no version 'memver_forged'"):
        store.list_memory_versions(sid, after="memver_forged")
    assert store.get_memory_version(sid, "memver_forged") is None


def test_redaction_erases_one_version_for_good(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "a.md", "public")
    secret = store.update_memory(sid, entry.entry_id, "the password is hunter2", 1)
    versions = store.list_memory_versions(sid, entry_id=entry.entry_id).items
    redacted = store.redact_memory_version(sid, versions[1].version_id)
    assert redacted.redacted and redacted.redacted_at is not None and redacted.content is None
    assert (redacted.version, redacted.path, redacted.size) == (2, "a.md", secret.size)
    again = store.get_memory_version(sid, versions[1].version_id)
    assert again == redacted
    assert store.redact_memory_version(sid, versions[1].version_id) == redacted  # idempotent
    # the entry's current version is the redacted one: it reads as redacted everywhere
    current = store.get_memory(sid, entry.entry_id)
    assert current is not None and current.redacted and current.content is None
    assert store.get_memory_by_path(sid, "a.md") == current
    assert store.list_memories(sid).items[0].redacted
    listed = store.list_memory_versions(sid).items
    assert [v.redacted for v in listed] == [False, True]
    with pytest.raises(MemoryValidationError, match="content is required: the current version"):
        store.update_memory(sid, entry.entry_id, None, 2, path="moved.md")
    fresh = store.update_memory(sid, entry.entry_id, "clean", 2)
    assert not fresh.redacted and fresh.content == "clean"
    first = store.get_memory_version(sid, versions[0].version_id)
    assert first is not None and first.content == "public" and not first.redacted
    with pytest.raises(MemoryVersionNotFoundError):
        store.redact_memory_version(sid, "memver_nope")


def test_counters_follow_every_operation(store: ConversationStore, sid: str) -> None:
    def counters() -> tuple[int, int]:
        meta = store.get_memory_store(sid)
        assert meta is not None
        return meta.entry_count, meta.total_size

    a = store.create_memory(sid, "a.md", "ééé")  # 6 bytes
    assert counters() == (1, 6)
    b = store.create_memory(sid, "b.md", "1234")
    assert counters() == (2, 10)
    store.update_memory(sid, a.entry_id, "x", 1)
    assert counters() == (2, 5)
    store.update_memory(sid, b.entry_id, None, 1, path="c.md")
    assert counters() == (2, 5)
    store.delete_memory(sid, b.entry_id)
    assert counters() == (1, 1)
    store.redact_memory_version(sid, store.list_memory_versions(sid).items[0].version_id)
    assert counters() == (1, 1)  # a redaction keeps the versions' sizes (metadata)


def test_deleting_a_store_deletes_everything_in_it(store: ConversationStore, sid: str) -> None:
    store.create_memory(sid, "a.md", "a")
    other = store.create_memory_store("other").memory_store_id
    kept = store.create_memory(other, "a.md", "kept")
    store.delete_memory_store(sid)
    store.delete_memory_store(sid)  # idempotent
    assert store.get_memory_store(sid) is None
    with pytest.raises(MemoryStoreNotFoundError):
        store.list_memories(sid)
    with pytest.raises(MemoryStoreNotFoundError):
        store.list_memory_versions(sid)
    with pytest.raises(MemoryStoreNotFoundError):
        store.create_memory(sid, "b.md", "b")
    assert store.get_memory(other, kept.entry_id) == kept


def test_delete_user_data_takes_the_users_memory_stores(store: ConversationStore) -> None:
    alice = store.create_memory_store("a", user_id="alice").memory_store_id
    bob = store.create_memory_store("b", user_id="bob").memory_store_id
    store.create_memory(alice, "x.md", "alice's")
    store.create_memory(bob, "x.md", "bob's")
    store.append_message(conversation_id="c", role="user", content="hi", user_id="alice")
    assert store.delete_user_data(user_id="alice") == 1
    assert store.get_memory_store(alice) is None
    assert store.get_memory_store(bob) is not None
    assert [s.memory_store_id for s in store.list_memory_stores().items] == [bob]


def test_a_user_lists_only_their_stores(store: ConversationStore) -> None:
    """Every other entry point's ownership check is in test_memory_hostile.py."""
    store.create_memory_store("mine", user_id="alice")
    assert store.list_memory_stores(user_id="mallory").items == []
    assert [s.name for s in store.list_memory_stores(user_id="alice").items] == ["mine"]


def test_the_entry_quota_is_exact(backend_url: str) -> None:
    with ConversationStore(backend_url, limits=Limits(max_memory_entries_per_store=2)) as store:
        sid = store.create_memory_store("s").memory_store_id
        a = store.create_memory(sid, "a", "a")
        store.create_memory(sid, "b", "b")
        with pytest.raises(MemoryQuotaExceededError, match="holds 2 entries; the limit is 2"):
            store.create_memory(sid, "c", "c")
        store.delete_memory(sid, a.entry_id)
        store.create_memory(sid, "c", "c")


def test_stores_attach_to_a_conversation(store: ConversationStore) -> None:
    a = store.create_memory_store("a", user_id="alice").memory_store_id
    b = store.create_memory_store("b").memory_store_id  # unowned: anyone may use it
    foreign = store.create_memory_store("f", user_id="bob").memory_store_id
    assert store.attach_memory_stores("chat", [a, b, a], user_id="alice") == [a, b]
    assert store.attach_memory_stores("chat", [b]) == [a, b]
    meta = store.get_conversation(conversation_id="chat")
    assert meta is not None and meta.user_id == "alice"
    assert meta.metadata == {MEMORY_STORES_KEY: [a, b]}
    assert store.attached_memory_stores("chat") == [a, b]
    with pytest.raises(MemoryStoreOwnershipError):
        store.attach_memory_stores("chat", [foreign])  # alice's conversation, bob's store
    with pytest.raises(MemoryStoreNotFoundError):
        store.attach_memory_stores("chat", ["memstore_missing"])
    assert store.attached_memory_stores("chat") == [a, b]
    assert store.detach_memory_stores("chat", [a]) == [b]
    assert store.detach_memory_stores("chat", [b]) == []
    meta = store.get_conversation(conversation_id="chat")
    assert meta is not None and meta.metadata == {}
    assert store.detach_memory_stores("nowhere", [a]) == []
    assert store.attached_memory_stores("nowhere") == []


def test_memory_context_lists_paths_and_small_contents(store: ConversationStore) -> None:
    sid = store.create_memory_store("Project <X>", description="what we learned").memory_store_id
    store.create_memory(sid, "prefs.md", "likes tea")
    store.create_memory(sid, "big.md", "b" * 5000)
    secret = store.create_memory(sid, "secret.md", "s3cr3t")
    store.redact_memory_version(sid, store.list_memory_versions(sid).items[2].version_id)
    gone = store.create_memory_store("gone").memory_store_id
    store.attach_memory_stores("chat", [sid, gone])
    store.delete_memory_store(gone)
    text = memory_context(store, conversation_id="chat", max_entry_bytes=100)
    assert text.startswith("<memory_stores>\n") and text.endswith("\n</memory_stores>")
    assert 'name="Project &lt;X&gt;"' in text and "what we learned" in text
    assert "- big.md (5000 bytes, not shown)" in text
    assert f"- secret.md ({secret.size} bytes, redacted)" in text and "s3cr3t" not in text
    assert '<file path="prefs.md">\nlikes tea\n</file>' in text
    assert "gone" not in text
    assert memory_context(store, conversation_id="chat", max_total_bytes=3).count("<file") == 0
    assert memory_context(store, conversation_id="no memory") == ""
    with pytest.raises(MemoryValidationError, match="max_paths must be between 1"):
        memory_context(store, conversation_id="chat", max_paths=0)


def test_vacuum_runs_on_every_backend(store: ConversationStore, sid: str) -> None:
    entry = store.create_memory(sid, "a.md", "x")
    store.vacuum()
    assert store.get_memory(sid, entry.entry_id) == entry


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_the_async_store_has_every_memory_method(astore: AsyncConversationStore) -> None:
    sid = (await astore.create_memory_store("s", user_id="u")).memory_store_id
    entry = await astore.create_memory(sid, "a.md", "one", user_id="u")
    assert (await astore.get_memory(sid, entry.entry_id)) == entry
    assert (await astore.get_memory_by_path(sid, "a.md")) == entry
    updated = await astore.update_memory(sid, entry.entry_id, "two", 1)
    assert updated.version == 2
    assert [e.path for e in (await astore.list_memories(sid)).items] == ["a.md"]
    versions = (await astore.list_memory_versions(sid)).items
    assert (await astore.get_memory_version(sid, versions[0].version_id)) is not None
    await astore.redact_memory_version(sid, versions[0].version_id)
    assert (await astore.attach_memory_stores("c", [sid])) == [sid]
    assert (await astore.attached_memory_stores("c")) == [sid]
    assert "two" in await amemory_context(astore, conversation_id="c")
    assert (await astore.detach_memory_stores("c", [sid])) == []
    await astore.delete_memory(sid, entry.entry_id)
    assert [s.memory_store_id for s in (await astore.list_memory_stores()).items] == [sid]
    meta = await astore.get_memory_store(sid)
    assert meta is not None and meta.entry_count == 0
    await astore.vacuum()
    await astore.delete_memory_store(sid)
    assert (await astore.get_memory_store(sid)) is None
