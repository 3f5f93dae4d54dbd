"""Redacted and deleted memory leaves the files: on SQLite at once (``secure_delete`` and the
write-ahead log emptied after each erasing call), on PostgreSQL after the documented
maintenance (``store.vacuum()``: dead tuples stay in the table files until then)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from convostore import ConversationStore
from test_erasure import copies

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


def _pg_copies(conn: psycopg.Connection[tuple[bytes]], marker: str) -> int:
    """Copies of ``marker`` in the memory tables' files on disk (heap and TOAST), after the
    server has written every dirty page out."""
    conn.execute("CHECKPOINT")
    found = 0
    for table in ("convostore_memory_versions", "convostore_memory_entries"):
        for (path,) in conn.execute(
            "SELECT pg_relation_filepath(oid) FROM pg_class WHERE oid = %s::regclass"
            " UNION ALL SELECT pg_relation_filepath(reltoastrelid) FROM pg_class"
            " WHERE oid = %s::regclass AND reltoastrelid <> 0",
            [table, table],
        ).fetchall():
            [(data,)] = conn.execute("SELECT pg_read_binary_file(%s)", [path]).fetchall()
            found += bytes(data).count(marker.encode())
    return found


def _wait_for_older_snapshots(conn: psycopg.Connection[tuple[bytes]]) -> None:
    """Wait (up to a minute) until no other session of the database holds a snapshot taken
    before now: VACUUM keeps every row such a snapshot may see. Other test runs sharing the
    server are what this waits for; nothing in this test holds one."""
    [(now,)] = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchall()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        [(older,)] = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL"
            " AND backend_xmin::text::bigint <= %s",
            [now % 2**32],
        ).fetchall()
        if not older:
            return
        time.sleep(0.1)
    pytest.fail("another session of the database kept an old snapshot open for a minute")


@pytest.mark.parametrize("erase", ERASERS)
def test_postgresql_files_keep_no_copy_after_vacuum(
    pg: tuple[ConversationStore, psycopg.Connection[tuple[bytes]]], erase: str
) -> None:
    store, conn = pg
    marker = uuid.uuid4().hex
    sid, eid = _write_secret(store, marker)
    assert _pg_copies(conn, marker) >= 1  # the file read sees what is stored
    ERASERS[erase](store, sid, eid)
    assert not _readable_everywhere(store, sid, eid, marker)
    # Until vacuum, the old row may survive as a dead tuple (page pruning sometimes removes
    # it earlier; nothing promises it): the documented maintenance removes it, once no
    # transaction that could still see it is running in the database.
    _wait_for_older_snapshots(conn)
    store.vacuum()
    assert _pg_copies(conn, marker) == 0
