"""What a PostgreSQL table keeps in its files on disk (the erasure tests read them)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import psycopg
import pytest


def table_copies(conn: psycopg.Connection[tuple[bytes]], tables: Sequence[str], marker: str) -> int:
    """Copies of ``marker`` in the tables' files on disk (heap, TOAST and every index: the
    search index included), after the server has written every dirty page out."""
    conn.execute("CHECKPOINT")
    found = 0
    for table in tables:
        for (path,) in conn.execute(
            "SELECT pg_relation_filepath(oid) FROM pg_class WHERE oid = %s::regclass"
            " UNION ALL SELECT pg_relation_filepath(reltoastrelid) FROM pg_class"
            " WHERE oid = %s::regclass AND reltoastrelid <> 0"
            " UNION ALL SELECT pg_relation_filepath(indexrelid) FROM pg_index"
            " WHERE indrelid = %s::regclass",
            [table, table, table],
        ).fetchall():
            [(data,)] = conn.execute("SELECT pg_read_binary_file(%s)", [path]).fetchall()
            found += bytes(data).count(marker.encode())
    return found


def wait_for_older_snapshots(conn: psycopg.Connection[tuple[bytes]]) -> None:
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
