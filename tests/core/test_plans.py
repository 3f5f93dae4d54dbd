"""Page and list queries walk their index in order on PostgreSQL even right after a bulk load,
before any ANALYZE (without statistics the planner takes ``column = ?`` for a handful of rows,
reads them all and sorts, so a page would cost the whole conversation or user). The plans are
read with EXPLAIN: a fact about the query shapes, not a timing. The tables are loaded to a few
thousand rows: on a tiny table reading all and sorting is the right plan, and is chosen. Reads
by a memory entry's id take its index even in a store the last ANALYZE did not see."""
# (The loads below give each table its rows in one statement, as an import would.)

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from convostore import ConversationStore
from convostore.backends.base import Tx


class Explained:
    """Runs a ``Tx`` statement method with EXPLAIN in front of each statement it sends."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.plans: list[str] = []

    def execute(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        rows = self.tx.execute("EXPLAIN " + sql, params)
        self.plans.append("\n".join(r[0] for r in rows))
        return []


# A bulk load as a migration or an import does it: many rows at once, straight into the tables.
BULK_LOAD = [
    "INSERT INTO convostore_conversations SELECT 'c' || i, 'u', i, i, 1, 2, NULL"
    " FROM generate_series(1, 20000) i",
    "INSERT INTO convostore_conversations VALUES ('big', NULL, 0, 0, 20000, 20001, NULL)",
    "INSERT INTO convostore_messages SELECT 'big', i, 'msg_' || i, 'user', '\"x\"', NULL, i, NULL"
    " FROM generate_series(1, 20000) i",
    "INSERT INTO convostore_memory_stores SELECT 'memstore_' || i, 'u', 'm', NULL, NULL, 0, 0,"
    " 0, 0, 1 FROM generate_series(1, 20000) i",
    "INSERT INTO convostore_memory_entries SELECT 'memstore_1', 'notes/' || i, 'mem_' || i, 1,"
    " i, 4, 0, 0 FROM generate_series(1, 20000) i",
    "INSERT INTO convostore_memory_versions SELECT 'memstore_1', i, 'memver_' || i, 'mem_' || i,"
    " 1, 'create', 'notes/' || i, 4, 0, NULL, 'text'::bytea FROM generate_series(1, 20000) i",
]


@pytest.fixture
def loaded(pg_schema_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(pg_schema_url) as store:
        with psycopg.connect(pg_schema_url, autocommit=True) as conn:
            for statement in BULK_LOAD:
                conn.execute(statement.encode())
            analyzed = conn.execute(
                "SELECT count(*) FROM pg_stat_user_tables WHERE schemaname = current_schema()"
                " AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)"
            ).fetchone()
        assert analyzed == (0,)  # the point: no statistics yet
        yield store


CALLS: dict[str, Callable[[Any, str], object]] = {
    "get_messages newest": lambda tx, sid: Tx.message_page(
        tx, "big", after_seq=None, before_seq=None, newest_first=True, limit=21
    ),
    "get_messages after a cursor": lambda tx, sid: Tx.message_page(
        tx, "big", after_seq=15000, before_seq=None, newest_first=False, limit=21
    ),
    "get_history last 20": lambda tx, sid: Tx.message_contents(tx, "big", 20),
    "list_conversations of a user": lambda tx, sid: Tx.page_conversations(tx, "u", None, True, 21),
    "list_conversations of a user, next page": lambda tx, sid: Tx.page_conversations(
        tx, "u", (15000, "c15000"), True, 21
    ),
    "list_memories": lambda tx, sid: Tx.page_memory_entries(
        tx, sid, after=None, prefix=None, limit=21
    ),
    "list_memories under a prefix": lambda tx, sid: Tx.page_memory_entries(
        tx, sid, after=None, prefix="notes/1", limit=21
    ),
    "list_memory_versions": lambda tx, sid: Tx.page_memory_versions(
        tx, sid, entry_id=None, after_seq=100, limit=21
    ),
    "list_memory_stores of a user": lambda tx, sid: Tx.page_memory_stores(tx, "u", None, 21),
}


@pytest.mark.parametrize("name", CALLS)
def test_pages_walk_an_index_without_statistics(loaded: ConversationStore, name: str) -> None:
    sid = "memstore_1"

    def explain(tx: Tx) -> list[str]:
        explained = Explained(tx)
        CALLS[name](explained, sid)
        return explained.plans

    [plan] = loaded.backend.read(explain)
    assert "Index" in plan, plan
    for wrong in ("Sort", "Bitmap", "Seq Scan"):
        assert wrong not in plan, plan


# A store created after the last ANALYZE: the planner takes its rows for a handful.
NEW_STORE = [
    "INSERT INTO convostore_memory_stores VALUES ('memstore_new', NULL, 'n', NULL, NULL, 0, 0,"
    " 3000, 12000, 3001)",
    "INSERT INTO convostore_memory_entries SELECT 'memstore_new', 'new/' || i, 'mem_new' || i,"
    " 1, i, 4, 0, 0 FROM generate_series(1, 3000) i",
    "INSERT INTO convostore_memory_versions SELECT 'memstore_new', i, 'memver_new' || i,"
    " 'mem_new' || i, 1, 'create', 'new/' || i, 4, 0, NULL, 'text'::bytea"
    " FROM generate_series(1, 3000) i",
]

BY_ID: dict[str, tuple[Callable[[Any], object], str]] = {
    "get_memory": (
        lambda tx: Tx.store_and_entry(tx, "memstore_new", entry_id="mem_new7", content=True),
        "convostore_memory_entries_by_id",
    ),
    "delete_memory of a deleted entry": (
        lambda tx: Tx.last_memory_version(tx, "memstore_new", "mem_new7"),
        "convostore_memory_versions_by_entry",
    ),
    "list_memory_versions of an entry": (
        lambda tx: Tx.page_memory_versions(
            tx, "memstore_new", entry_id="mem_new7", after_seq=None, limit=21
        ),
        "convostore_memory_versions_by_entry",
    ),
}


@pytest.mark.parametrize("name", BY_ID)
def test_an_entry_is_found_by_its_id_in_a_store_the_statistics_miss(
    loaded: ConversationStore, name: str
) -> None:
    """An entry (or its versions) read by id takes the id's index, not a walk of the store's
    entries along the primary key that the planner would cost as a handful of rows."""
    with psycopg.connect(loaded.url, autocommit=True) as conn:
        conn.execute(b"ANALYZE")
        for statement in NEW_STORE:
            conn.execute(statement.encode())
    call, index = BY_ID[name]

    def explain(tx: Tx) -> list[str]:
        explained = Explained(tx)
        call(explained)
        return explained.plans

    [plan] = loaded.backend.read(explain)
    assert index in plan, plan
    assert "Seq Scan on convostore_memory_entries" not in plan, plan
