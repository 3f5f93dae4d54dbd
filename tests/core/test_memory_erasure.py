"""Redacted and deleted memory leaves the files: on SQLite at once (``secure_delete`` and the
write-ahead log emptied after each erasing call), on PostgreSQL after the documented
maintenance (``store.vacuum()``: dead tuples stay in the table files until then)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from convostore import ConversationStore
from pg_files import table_copies, wait_for_older_snapshots
from test_erasure import copies

MEMORY_TABLES = ("convostore_memory_versions", "convostore_memory_entries")

Eraser = Callable[[ConversationStore, str, str], object]


def _redact(store: ConversationStore, sid: str, eid: str) -> None:
    [first, _] = store.list_memory_versions(sid, entry_id=eid).items
    store.redact_memory_version(sid, first.version_id)


ERASERS: dict[str, Eraser] = {
    "redact_memory_version": _redact,
    "delete_memory_store": lambda s, sid, eid: s.delete_memory_store(sid),
    "delete_user_data": lambda s, sid, eid: s.delete_user_data(user_id="alice"),
}


def _write_secret(store: ConversationStore, marker: str) -> tuple[str, str]:
    """Alice's store with an entry whose first version holds ``marker``; returns the ids."""
    sid = store.create_memory_store("secrets", user_id="alice").memory_store_id
    entry = store.create_memory(sid, "notes/keys.md", f"the key is {marker}")
    store.update_memory(sid, entry.entry_id, "rotated: nothing to see", 1)
    for i in range(30):  # enough to spread over several pages and WAL frames
        store.create_memory(sid, f"filler/{i}.md", f"filler {i} " * 40)
    return sid, entry.entry_id


def _readable_everywhere(store: ConversationStore, sid: str, eid: str, marker: str) -> bool:
    """Whether any read path still gives the marker."""
    texts = []
    if store.get_memory_store(sid) is not None:
        entry = store.get_memory(sid, eid)
        texts.append(entry.content if entry else None)
        for v in store.list_memory_versions(sid, entry_id=eid).items:
            got = store.get_memory_version(sid, v.version_id)
            texts.append(got.content if got else None)
    return any(marker in (t or "") for t in texts)


@pytest.mark.parametrize("erase", ERASERS)
def test_sqlite_files_keep_no_copy(tmp_path: Path, erase: str) -> None:
    db = tmp_path / "memory.db"
    marker = uuid.uuid4().hex
    with (
        ConversationStore(f"sqlite:///{db}") as other,
        ConversationStore(f"sqlite:///{db}") as store,
    ):
        sid, eid = _write_secret(store, marker)
        assert copies(db, marker)  # the grep sees what is stored
        ERASERS[erase](store, sid, eid)
        assert copies(db, marker) == {}
        assert not _readable_everywhere(store, sid, eid, marker)
        other.create_memory_store("after")  # the file still works for everyone
    assert copies(db, marker) == {}


@pytest.fixture
def pg(pg_schema_url: str) -> Iterator[tuple[ConversationStore, psycopg.Connection[tuple[bytes]]]]:
    with (
        ConversationStore(pg_schema_url) as store,
        psycopg.connect(pg_schema_url, autocommit=True) as conn,
    ):
        yield store, conn


@pytest.mark.parametrize("erase", ERASERS)
def test_postgresql_files_keep_no_copy_after_vacuum(
    pg: tuple[ConversationStore, psycopg.Connection[tuple[bytes]]], erase: str
) -> None:
    store, conn = pg
    marker = uuid.uuid4().hex
    sid, eid = _write_secret(store, marker)
    assert table_copies(conn, MEMORY_TABLES, marker) >= 1  # the file read sees what is stored
    ERASERS[erase](store, sid, eid)
    assert not _readable_everywhere(store, sid, eid, marker)
    # Until vacuum, the old row may survive as a dead tuple (page pruning sometimes removes
    # it earlier; nothing promises it): the documented maintenance removes it, once no
    # transaction that could still see it is running in the database.
    wait_for_older_snapshots(conn)
    store.vacuum()
    assert table_copies(conn, MEMORY_TABLES, marker) == 0
