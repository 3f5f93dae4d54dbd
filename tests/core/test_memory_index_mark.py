"""SQLite's memory updates leave their entries' index rows to a batch (a store's
``indexed_seq`` marks the stale ones; searches read them directly meanwhile), and the migration
step that brought the mark converts a store written before it without losing anything."""

from __future__ import annotations

from convostore import ConversationStore
from convostore.backends import open_backend
from convostore.backends.schema import MIGRATIONS
from convostore.search_text import memory_index_text
from convostore.spi import Tx

SID = "memstore_old"


def _vid(seq: int) -> str:
    return f"memver_{seq:012x}{0:08x}{seq:012x}"


# (seq, entry, version, operation, path, content or None, redacted_at or None)
OLD_VERSIONS = [
    (1, "mem_a", 1, "create", "a.md", None, 50),  # redacted
    (2, "mem_a", 2, "update", "a.md", "alpha two", None),
    (3, "mem_b", 1, "create", "b.md", "beta one", None),
    (4, "mem_c", 1, "create", "c.md", "gamma one", None),
    (5, "mem_c", 2, "delete", "c.md", None, None),
    (6, "mem_d", 1, "create", "d.md", "delta unindexed", None),  # written before the index
]
LIVE = {"mem_a": (2, 2, "a.md", "alpha two"), "mem_b": (1, 3, "b.md", "beta one")}
LIVE["mem_d"] = (1, 6, "d.md", "delta unindexed")


def _write_old_store(tx: Tx, dialect: str) -> None:
    """What convostore wrote before the mark's step: every index row current."""
    size = sum(len(c.encode()) for *_, c in LIVE.values())
    tx.execute(
        "INSERT INTO convostore_memory_stores (id, user_id, name, description, metadata,"
        " created_at, updated_at, entry_count, total_size, next_seq)"
        " VALUES (?, 'u1', 'old', NULL, NULL, 10, 60, 3, ?, 7)",
        [SID, size],
    )
    for seq, eid, version, op, path, content, redacted in OLD_VERSIONS:
        body = None if content is None else content.encode()
        tx.execute(
            "INSERT INTO convostore_memory_versions (store_id, seq, id, entry_id, version,"
            " operation, path, size, created_at, redacted_at, content)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [SID, seq, _vid(seq), eid, version, op, path, len(body or b"x" * 9), 10 * seq,
             redacted, body],
        )  # fmt: skip
    for rid, (eid, (version, seq, path, content)) in enumerate(LIVE.items(), start=1):
        indexed = eid != "mem_d"
        text = memory_index_text(path, content.encode())
        column, value = ("search_rid", rid) if dialect == "sqlite" else ("search_text", text)
        tx.execute(
            "INSERT INTO convostore_memory_entries (store_id, path, id, version, version_seq,"
            f" size, created_at, updated_at, {column}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [SID, path, eid, version, seq, len(content.encode()), 10, 10 * seq,
             value if indexed else None],
        )  # fmt: skip
        if dialect == "sqlite" and indexed:
            tx.execute(
                "INSERT INTO convostore_memory_search (rowid, text, entry_id) VALUES (?, ?, ?)",
                [rid, text, eid],
            )


def _hits(store: ConversationStore, query: str) -> list[str]:
    return [h.path for h in store.search_memories(memory_store_id=SID, query=query).items]


def test_a_store_of_the_previous_schema_is_converted_without_loss(shared_url: str) -> None:
    backend = open_backend(shared_url)
    backend.migrate("core", MIGRATIONS[:-1])
    dialect = backend.dialect
    backend.write(lambda tx: _write_old_store(tx, dialect))
    backend.close()
    with ConversationStore(shared_url) as store:  # migrates
        info = store.get_memory_store(SID)
        assert info is not None
        assert (info.entry_count, info.total_size) == (3, len(b"alpha twobeta onedelta unindexed"))
        for eid, (version, _, path, content) in LIVE.items():
            entry = store.get_memory(SID, eid)
            assert entry is not None
            assert (entry.version, entry.path, entry.content) == (version, path, content)
        versions = store.list_memory_versions(SID, limit=100).items
        assert [(v.version_id, v.entry_id, v.version, v.operation, v.path) for v in versions] == [
            (_vid(seq), eid, version, op, path) for seq, eid, version, op, path, *_ in OLD_VERSIONS
        ]
        for seq, _, _, _, _, content, redacted in OLD_VERSIONS:
            got = store.get_memory_version(SID, _vid(seq))
            assert got is not None
            assert (got.content, got.redacted_at is not None) == (content, redacted is not None)
        assert store.get_memory(SID, "mem_c") is None
        assert _hits(store, "alpha") == ["a.md"]
        assert _hits(store, "delta") == ["d.md"]
        assert _hits(store, "gamma") == []
        # writes go on where the old ones stopped, and the index follows them
        updated = store.update_memory(SID, "mem_b", "beta two", 1)
        last = store.list_memory_versions(SID, limit=100).items[-1]
        assert (updated.version, last.version_id[-12:]) == (2, f"{7:012x}")
        assert _hits(store, "beta one") == []
        assert _hits(store, "beta two") == ["b.md"]
        info = store.get_memory_store(SID)
        assert info is not None
        assert (info.entry_count, info.total_size) == (3, len(b"alpha twobeta twodelta unindexed"))
        # SQLite: the entry written before the index and the one just updated (PostgreSQL
        # keeps each update's text in the update's own transaction)
        assert store.reindex() == (2 if dialect == "sqlite" else 1)
        assert _hits(store, "beta") == ["b.md"]
        assert _hits(store, "delta") == ["d.md"]


def _index_text(store: ConversationStore, eid: str) -> str | None:
    rows = store.backend.read(
        lambda tx: tx.execute(
            "SELECT s.text FROM convostore_memory_search s JOIN convostore_memory_entries e"
            " ON e.search_rid = s.rowid WHERE e.id = ?",
            [eid],
        )
    )
    return str(rows[0][0]) if rows else None


def test_an_update_leaves_the_index_row_to_the_batch(tmp_path: object) -> None:
    with ConversationStore(f"sqlite:///{tmp_path}/m.db") as store:
        sid = store.create_memory_store("docs").memory_store_id
        entry = store.create_memory(sid, "a.md", "first words")
        other = store.create_memory(sid, "b.md", "other words")
        assert _index_text(store, entry.entry_id) is None  # a create waits for the batch too
        store.backend.index_pending()
        assert _index_text(store, entry.entry_id) == "a.md\nfirst words"
        updated = store.update_memory(sid, entry.entry_id, "second words", entry.version)
        assert _index_text(store, entry.entry_id) == "a.md\nfirst words"  # stale
        assert [
            h.path for h in store.search_memories(memory_store_id=sid, query="first").items
        ] == []
        hits = store.search_memories(memory_store_id=sid, query="second").items
        assert [h.path for h in hits] == ["a.md"]
        assert [
            h.path for h in store.search_memories(memory_store_id=sid, query="words").items
        ] == [
            "a.md",
            "b.md",
        ]
        store.backend.index_pending()
        assert _index_text(store, entry.entry_id) == "a.md\nsecond words"
        assert _index_text(store, other.entry_id) == "b.md\nother words"
        mark = store.backend.read(
            lambda tx: tx.execute("SELECT indexed_seq, next_seq FROM convostore_memory_stores")
        )
        assert mark[0][0] == mark[0][1]
        assert updated.version == 2


def test_redacting_the_version_a_stale_index_row_holds_rewrites_that_row(tmp_path: object) -> None:
    with ConversationStore(f"sqlite:///{tmp_path}/m.db") as store:
        sid = store.create_memory_store("docs").memory_store_id
        entry = store.create_memory(sid, "a.md", "secret marker")
        store.backend.index_pending()
        store.update_memory(sid, entry.entry_id, "public text", entry.version)
        assert _index_text(store, entry.entry_id) == "a.md\nsecret marker"  # stale
        first = store.list_memory_versions(sid, entry_id=entry.entry_id).items[0]
        store.redact_memory_version(sid, first.version_id)
        assert _index_text(store, entry.entry_id) == "a.md\npublic text"
        assert [
            h.path for h in store.search_memories(memory_store_id=sid, query="secret").items
        ] == []


def test_a_batch_takes_every_stale_row_of_a_hot_entry_once(tmp_path: object) -> None:
    from convostore.backends.sqlite import INDEX_BATCH

    with ConversationStore(f"sqlite:///{tmp_path}/m.db") as store:
        sid = store.create_memory_store("docs").memory_store_id
        entry = store.create_memory(sid, "hot.md", "v1")
        version = entry.version
        for i in range(INDEX_BATCH + 2):  # the create and 255 updates make a batch
            version = store.update_memory(sid, entry.entry_id, f"text {i} here", version).version
        [(mark, upto)] = store.backend.read(
            lambda tx: tx.execute("SELECT indexed_seq, next_seq FROM convostore_memory_stores")
        )
        assert upto - mark == 3  # three updates since the batch
        assert _index_text(store, entry.entry_id) == f"hot.md\ntext {INDEX_BATCH - 2} here"
        hits = store.search_memories(memory_store_id=sid, query=f"text {INDEX_BATCH + 1} ").items
        assert [h.path for h in hits] == ["hot.md"]
