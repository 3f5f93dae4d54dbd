"""The memory stores' tables and statements (part of the core component; ``Tx`` has them).

A memory store's row holds its counters (``entry_count``, ``total_size``) and the sequence
number of its next version; every write locks that row first (or, for a create or an update
on rows this process wrote last, updates it only where it still holds them), so counters stay
exact and versions are numbered in commit order. An entry row is a live entry (deleting it
removes the row, so the path is free again); its content lives once, in its current version's
row.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..search_text import memory_index_text
from .keys import key_range, prefix_upper

MEMORY_TABLES = (
    "convostore_memory_stores",
    "convostore_memory_entries",
    "convostore_memory_versions",
)

MEMORY_MIGRATION: list[str] = [
    """CREATE TABLE convostore_memory_stores (
        id TEXT {collate} PRIMARY KEY,
        user_id TEXT {collate},
        name TEXT NOT NULL,
        description TEXT,
        metadata TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        entry_count BIGINT NOT NULL,
        total_size BIGINT NOT NULL,
        next_seq BIGINT NOT NULL
    )""",
    "CREATE INDEX convostore_memory_stores_by_user ON convostore_memory_stores (user_id, id)",
    """CREATE TABLE convostore_memory_entries (
        store_id TEXT {collate} NOT NULL,
        path TEXT {collate} NOT NULL,
        id TEXT {collate} NOT NULL,
        version BIGINT NOT NULL,
        version_seq BIGINT NOT NULL,
        size BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (store_id, path)
    )""",
    "CREATE UNIQUE INDEX convostore_memory_entries_by_id ON convostore_memory_entries (id)",
    """CREATE TABLE convostore_memory_versions (
        store_id TEXT {collate} NOT NULL,
        seq BIGINT NOT NULL,
        id TEXT {collate} NOT NULL,
        entry_id TEXT {collate} NOT NULL,
        version BIGINT NOT NULL,
        operation TEXT NOT NULL,
        path TEXT {collate} NOT NULL,
        size BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        redacted_at BIGINT,
        content {blob},
        PRIMARY KEY (store_id, seq)
    )""",
    "CREATE INDEX convostore_memory_versions_by_entry"
    " ON convostore_memory_versions (entry_id, seq)",
]


# A create or an update that keeps the path, written only where the rows are as the caller
# saw them (Tx.write_memory_if_unchanged): a function on PostgreSQL, so that the server plans
# its statements once per connection (a statement sent without a prepared statement, which a
# transaction-mode pooler needs, is planned on every call: here, most of the call's time).
MEMORY_WRITE_FUNCTION = """CREATE OR REPLACE FUNCTION convostore_memory_write(
        p_store text, p_seen_count bigint, p_seen_size bigint, p_seen_seq bigint,
        p_updated_at bigint, p_count bigint, p_size bigint, p_next_seq bigint,
        p_was_path text, p_was_version bigint, p_was_version_seq bigint, p_was_size bigint,
        p_path text, p_entry text, p_version bigint, p_version_seq bigint, p_entry_size bigint,
        p_created_at bigint, p_entry_updated_at bigint,
        p_seq bigint, p_version_id text, p_operation text, p_version_size bigint,
        p_version_at bigint, p_content bytea{param}
    ) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF p_was_path IS NULL THEN  -- a create: the path must be free
        PERFORM FROM convostore_memory_entries WHERE store_id = p_store AND path = p_path;
        IF FOUND THEN
            RETURN false;
        END IF;
    ELSE  -- an update: the entry must be as seen
        PERFORM FROM convostore_memory_entries WHERE store_id = p_store AND path = p_was_path
            AND id = p_entry AND version = p_was_version AND version_seq = p_was_version_seq
            AND size = p_was_size;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
    END IF;
    -- every write to a store moves its next_seq: a row that still holds it saw none since
    UPDATE convostore_memory_stores SET updated_at = p_updated_at, entry_count = p_count,
        total_size = p_size, next_seq = p_next_seq
        WHERE id = p_store AND entry_count = p_seen_count AND total_size = p_seen_size
        AND next_seq = p_seen_seq;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_was_path IS NULL THEN
        INSERT INTO convostore_memory_entries (store_id, path, id, version, version_seq, size,
            created_at, updated_at{column})
        VALUES (p_store, p_path, p_entry, p_version, p_version_seq, p_entry_size, p_created_at,
            p_entry_updated_at{value});
    ELSE
        UPDATE convostore_memory_entries SET version = p_version, version_seq = p_version_seq,
            size = p_entry_size, updated_at = p_entry_updated_at{assign}
            WHERE store_id = p_store AND path = p_was_path AND id = p_entry;
    END IF;
    INSERT INTO convostore_memory_versions (store_id, seq, id, entry_id, version, operation,
        path, size, created_at, redacted_at, content)
    VALUES (p_store, p_seq, p_version_id, p_entry, p_version, p_operation, p_path,
        p_version_size, p_version_at, NULL, p_content);
    RETURN true;
END $$"""


def memory_write_function(*, search: bool) -> str:
    """``MEMORY_WRITE_FUNCTION`` as first written, or (``search``) also writing the entry's
    searchable text (``backends/search.py``), its last parameter."""
    parts = {"{param}": "", "{column}": "", "{value}": "", "{assign}": ""}
    if search:
        parts = {
            "{param}": ", p_search_text text",
            "{column}": ", search_text",
            "{value}": ", p_search_text",
            "{assign}": ", search_text = p_search_text",
        }
    text = MEMORY_WRITE_FUNCTION
    for placeholder, value in parts.items():
        text = text.replace(placeholder, value)
    return text


class MemoryStoreRow(NamedTuple):
    id: str
    user_id: str | None
    name: str
    description: str | None
    metadata: str | None
    created_at: int
    updated_at: int
    entry_count: int
    total_size: int
    next_seq: int


class MemoryEntryRow(NamedTuple):
    store_id: str
    path: str
    id: str
    version: int
    version_seq: int
    size: int
    created_at: int
    updated_at: int
    redacted_at: int | None = None  # of the current version (read with it)
    content: bytes | None = None  # of the current version, when read with content


class MemoryVersionRow(NamedTuple):
    store_id: str
    seq: int
    id: str
    entry_id: str
    version: int
    operation: str
    path: str
    size: int
    created_at: int
    redacted_at: int | None
    content: bytes | None = None


_STORE = (
    "id, user_id, name, description, metadata, created_at, updated_at, entry_count,"
    " total_size, next_seq"
)
_STORE_S = ", ".join(f"s.{c.strip()}" for c in _STORE.split(","))
_ENTRY = "e.store_id, e.path, e.id, e.version, e.version_seq, e.size, e.created_at, e.updated_at"
_ENTRY_JOIN = (
    " FROM convostore_memory_entries e JOIN convostore_memory_versions v"
    " ON v.store_id = e.store_id AND v.seq = e.version_seq"
)
_VERSION = "store_id, seq, id, entry_id, version, operation, path, size, created_at, redacted_at"


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


class MemoryStatements(ABC):
    """The memory stores' statements, written once for both databases (``?`` placeholders)."""

    lock_suffix = ""
    one_statement_writes = False  # convostore_memory_write, one call (PostgreSQL)

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def send(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]: ...

    # -- stores ----------------------------------------------------------------------------

    def memory_store(self, sid: str, *, lock: bool = False) -> MemoryStoreRow | None:
        suffix = self.lock_suffix if lock else ""
        rows = self.execute(
            f"SELECT {_STORE} FROM convostore_memory_stores WHERE id = ?{suffix}", [sid]
        )
        return MemoryStoreRow(*rows[0]) if rows else None

    def insert_memory_store(self, row: MemoryStoreRow) -> None:
        marks = ", ".join("?" for _ in row)
        self.send(f"INSERT INTO convostore_memory_stores ({_STORE}) VALUES ({marks})", row)

    def save_memory_store(self, row: MemoryStoreRow) -> None:
        self.send(
            "UPDATE convostore_memory_stores SET updated_at = ?, entry_count = ?,"
            " total_size = ?, next_seq = ? WHERE id = ?",
            [row.updated_at, row.entry_count, row.total_size, row.next_seq, row.id],
        )

    def page_memory_stores(
        self, user_id: str | None, after: str | None, limit: int
    ) -> list[MemoryStoreRow]:
        """Up to ``limit`` stores by id past ``after``; a user's as a range on the index key
        (``key_range``)."""
        if user_id is None:
            where, params = ("WHERE id > ? ", [after]) if after is not None else ("", [])
            sql = f"SELECT {_STORE} FROM convostore_memory_stores {where}ORDER BY id LIMIT ?"
            return [MemoryStoreRow(*r) for r in self.execute(sql, [*params, limit])]
        where, params = key_range("user_id, id", user_id, after=after, low="")
        rows = self.execute(
            f"SELECT {_STORE} FROM convostore_memory_stores WHERE {where}"
            " ORDER BY user_id, id LIMIT ?",
            [*params, limit],
        )
        return [MemoryStoreRow(*r) for r in rows]

    def delete_memory_store(self, sid: str) -> None:
        self.send("DELETE FROM convostore_memory_versions WHERE store_id = ?", [sid])
        self.send("DELETE FROM convostore_memory_entries WHERE store_id = ?", [sid])
        self.send("DELETE FROM convostore_memory_stores WHERE id = ?", [sid])

    def delete_user_memory_stores(self, user_id: str) -> int:
        """Delete every memory store of ``user_id`` with its entries and versions."""
        owned = "(SELECT id FROM convostore_memory_stores WHERE user_id = ?)"
        self.send(f"DELETE FROM convostore_memory_versions WHERE store_id IN {owned}", [user_id])
        self.send(f"DELETE FROM convostore_memory_entries WHERE store_id IN {owned}", [user_id])
        return len(
            self.execute(
                "DELETE FROM convostore_memory_stores WHERE user_id = ? RETURNING id", [user_id]
            )
        )

    # -- entries ---------------------------------------------------------------------------

    def store_and_entry(
        self,
        sid: str,
        *,
        entry_id: str | None = None,
        path: str | None = None,
        content: bool = False,
        lock: bool = False,
    ) -> tuple[MemoryStoreRow | None, MemoryEntryRow | None]:
        """The memory store's row and its live entry with that id (or at that path), with its
        current version's redaction time and, with ``content``, its content. Without ``lock``
        one statement; with it, the store's row is locked first and the entry read after the
        lock is held (in the same round trip on a server database): a join would read the
        entry from before a wait for the lock."""
        extra = ", v.redacted_at" + (", v.content" if content else "")
        # By id, the entry is found by its id alone (ids are unique) and its store compared
        # after: with the store in the condition, a planner without statistics of a new store
        # walks all its entries along the primary key instead (a MATERIALIZED query keeps the
        # join's condition out).
        where, params = (
            ("e.id = ?", [entry_id]) if entry_id else ("e.store_id = ? AND e.path = ?", [sid, path])
        )
        entry_sql = f"SELECT {_ENTRY}{extra}{_ENTRY_JOIN} WHERE {where}"
        if lock:
            stores, entries = self.execute_batch(
                [
                    (
                        f"SELECT {_STORE} FROM convostore_memory_stores WHERE id = ?"
                        + self.lock_suffix,
                        [sid],
                    ),
                    (entry_sql, params),
                ]
            )
            entries = [e for e in entries if e[0] == sid]
            found = [(*stores[0], *entries[0]) if entries else (*stores[0], None)] if stores else []
        else:
            found = self.execute(
                f"WITH x AS MATERIALIZED ({entry_sql}) SELECT {_STORE_S}, x.*"
                " FROM convostore_memory_stores s LEFT JOIN x ON x.store_id = s.id"
                " WHERE s.id = ?",
                [*params, sid],
            )
        if not found:
            return None, None
        row = found[0]
        store = MemoryStoreRow(*row[:10])
        if row[10] is None:
            return store, None
        entry = MemoryEntryRow(*row[10:19])
        return store, entry._replace(content=_bytes(row[19])) if content else entry

    def insert_memory_entry(self, row: MemoryEntryRow) -> None:
        self.send(
            "INSERT INTO convostore_memory_entries (store_id, path, id, version, version_seq,"
            " size, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            row[:8],
        )

    def update_memory_entry(self, row: MemoryEntryRow, *, was_at: str) -> None:
        """Point the entry (found at its primary key: ``was_at``, its path before) at its new
        version, and at its new path if it moved (a column that is set is rewritten in its
        indexes even when its value is unchanged)."""
        moved = row.path != was_at
        self.send(
            f"UPDATE convostore_memory_entries SET {'path = ?, ' if moved else ''}version = ?,"
            " version_seq = ?, size = ?, updated_at = ? WHERE store_id = ? AND path = ?"
            " AND id = ?",
            [
                *([row.path] if moved else []),
                row.version,
                row.version_seq,
                row.size,
                row.updated_at,
                row.store_id,
                was_at,
                row.id,
            ],
        )

    def delete_memory_entry(self, entry: MemoryEntryRow) -> None:
        self.send(
            "DELETE FROM convostore_memory_entries WHERE store_id = ? AND path = ? AND id = ?",
            [entry.store_id, entry.path, entry.id],
        )

    def write_memory_if_unchanged(
        self,
        seen: MemoryStoreRow,
        store: MemoryStoreRow,
        version: MemoryVersionRow,
        entry: MemoryEntryRow,
        *,
        was: MemoryEntryRow | None,
    ) -> bool:
        """Write a create (``was`` None: the entry's path must be free) or an update that keeps
        the path (``was``: the entry as seen), that is the version, the entry and the store's
        row, only if the store's row still holds what ``seen`` holds where a write reads it
        and the entry is still ``was`` (or the path still free); return whether it did
        (otherwise nothing is written). Every write to a store moves its ``next_seq``, so a
        store row that still holds it has seen no write since. On PostgreSQL one call of
        ``convostore_memory_write`` (the version's path and entry are the entry's); elsewhere,
        inside the caller's transaction, the store's conditional update first."""
        if self.one_statement_writes:
            return bool(
                self.execute(
                    f"SELECT convostore_memory_write({', '.join(['?'] * 26)})",
                    [
                        seen.id,
                        seen.entry_count,
                        seen.total_size,
                        seen.next_seq,
                        store.updated_at,
                        store.entry_count,
                        store.total_size,
                        store.next_seq,
                        *(
                            (None,) * 4
                            if was is None
                            else (was.path, was.version, was.version_seq, was.size)
                        ),
                        entry.path,
                        entry.id,
                        entry.version,
                        entry.version_seq,
                        entry.size,
                        entry.created_at,
                        entry.updated_at,
                        version.seq,
                        version.id,
                        version.operation,
                        version.size,
                        version.created_at,
                        version.content,
                        memory_index_text(entry.path, entry.content),
                    ],
                )[0][0]
            )
        at = " FROM convostore_memory_entries WHERE store_id = ? AND path = ?"
        if was is None:
            entry_guard = f"NOT EXISTS (SELECT 1{at})"
            guard_values: list[Any] = [entry.store_id, entry.path]
        else:
            entry_guard = (
                f"EXISTS (SELECT 1{at} AND id = ? AND version = ? AND version_seq = ? AND size = ?)"
            )
            guard_values = [was.store_id, was.path, was.id, was.version, was.version_seq, was.size]
        if not self.execute(
            "UPDATE convostore_memory_stores SET updated_at = ?, entry_count = ?,"
            " total_size = ?, next_seq = ? WHERE id = ? AND entry_count = ? AND total_size = ?"
            f" AND next_seq = ? AND {entry_guard} RETURNING 1",
            [
                store.updated_at,
                store.entry_count,
                store.total_size,
                store.next_seq,
                seen.id,
                seen.entry_count,
                seen.total_size,
                seen.next_seq,
                *guard_values,
            ],
        ):
            return False
        if was is None:
            self.insert_memory_entry(entry)
        else:
            self.update_memory_entry(entry, was_at=was.path)
        self.insert_memory_version(version)
        return True

    def page_memory_entries(
        self, sid: str, *, after: str | None, prefix: str | None, limit: int
    ) -> list[MemoryEntryRow]:
        """Up to ``limit`` live entries by path, past ``after``, starting with ``prefix``: a
        range seek on the primary key (paths compare by code point on both databases)."""
        start: str | None
        if prefix is not None and (after is None or prefix > after):
            start, inclusive = prefix, True
        else:
            start, inclusive = after, False
        where, params = key_range(
            "e.store_id, e.path",
            sid,
            after=start,
            inclusive=inclusive,
            low="",
            high=None if prefix is None else prefix_upper(prefix),
        )
        # The current version's redaction per listed row, as a subquery: a join could make a
        # planner without statistics hash the whole versions table.
        rows = self.execute(
            f"SELECT {_ENTRY}, (SELECT v.redacted_at FROM convostore_memory_versions v"
            " WHERE v.store_id = e.store_id AND v.seq = e.version_seq)"
            f" FROM convostore_memory_entries e WHERE {where}"
            " ORDER BY e.store_id, e.path LIMIT ?",
            [*params, limit],
        )
        return [MemoryEntryRow(*r) for r in rows]

    # -- versions --------------------------------------------------------------------------

    def insert_memory_version(self, row: MemoryVersionRow) -> None:
        self.send(
            f"INSERT INTO convostore_memory_versions ({_VERSION}, content)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )

    def memory_version(
        self, sid: str, seq: int, version_id: str, *, content: bool
    ) -> MemoryVersionRow | None:
        """The version ``seq`` of the store, if its id is ``version_id`` (the id holds the
        sequence number: no index on ids is needed)."""
        extra = ", content" if content else ""
        rows = self.execute(
            f"SELECT {_VERSION}{extra} FROM convostore_memory_versions"
            " WHERE store_id = ? AND seq = ? AND id = ?",
            [sid, seq, version_id],
        )
        if not rows:
            return None
        row = MemoryVersionRow(*rows[0][:10])
        return row._replace(content=_bytes(rows[0][10])) if content else row

    def page_memory_versions(
        self, sid: str, *, entry_id: str | None, after_seq: int | None, limit: int
    ) -> list[MemoryVersionRow]:
        """Up to ``limit`` versions of the store (or of one entry) past ``after_seq``, oldest
        first."""
        column = "store_id" if entry_id is None else "entry_id"
        where, params = key_range(
            f"{column}, seq", sid if entry_id is None else entry_id, after=after_seq, low=0
        )
        rows = self.execute(
            f"SELECT {_VERSION} FROM convostore_memory_versions WHERE {where}"
            f" ORDER BY {column}, seq LIMIT ?",
            [*params, limit],
        )
        # found by the entry alone (as store_and_entry finds entries): the store's only
        return [MemoryVersionRow(*r) for r in rows if r[0] == sid]

    def last_memory_version(self, sid: str, entry_id: str) -> MemoryVersionRow | None:
        """The entry's last version, if the entry is the store's (found by the entry's id
        alone, as ``store_and_entry`` finds it)."""
        rows = self.execute(
            f"SELECT {_VERSION} FROM convostore_memory_versions WHERE entry_id = ?"
            " ORDER BY entry_id DESC, seq DESC LIMIT 1",
            [entry_id],
        )
        return MemoryVersionRow(*rows[0]) if rows and rows[0][0] == sid else None

    def redact_memory_version(self, sid: str, seq: int, at: int) -> None:
        self.send(
            "UPDATE convostore_memory_versions SET content = NULL, redacted_at = ?"
            " WHERE store_id = ? AND seq = ?",
            [at, sid, seq],
        )
