"""The statements of the command line's library (``convostore.commands``): schema
introspection, whole-table copies, export reads, the restore path, invariant checks, retention
and sizes. ``?`` placeholders on both databases; table and column
names come from registered ``Component`` descriptions or from the database's own catalog,
never from input."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Tx
from .memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from .rows import ChangeRow, ConversationRow, MessageRow

_CONV = "id, user_id, created_at, last_message_at, message_count, next_seq, metadata"
_MSG = "seq, id, role, content, metadata, created_at, updated_at"
_STORE = (
    "id, user_id, name, description, metadata, created_at, updated_at, entry_count,"
    " total_size, next_seq"
)
_VERSION = "seq, id, entry_id, version, operation, path, size, created_at, redacted_at, content"
_ENTRY = "path, id, version, version_seq, size, created_at, updated_at"
MIGRATING = "convostore_migrating"
"""Present in a destination only while ``convostore migrate`` copies into it: the source."""

# -- the catalog -----------------------------------------------------------------------------


def table_names(tx: Tx, dialect: str) -> list[str]:
    """Every table of the database (of the current schema on PostgreSQL), by name."""
    if dialect == "sqlite":
        sql = (
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
    else:
        sql = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
        )
    return [r[0] for r in tx.execute(sql)]


def table_columns(tx: Tx, dialect: str, table: str) -> list[str]:
    """The columns of ``table`` in their declared order ([] if there is no such table)."""
    if dialect == "sqlite":
        rows = tx.execute("SELECT name FROM pragma_table_info(?) ORDER BY cid", [table])
    else:
        rows = tx.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = ? ORDER BY ordinal_position",
            [table],
        )
    return [r[0] for r in rows]


def schema_versions(tx: Tx) -> dict[str, int]:
    """Each component's migration version (the table exists once a store has opened)."""
    rows = tx.execute("SELECT component, version FROM convostore_schema")
    return {r[0]: int(r[1]) for r in rows}


# -- whole tables ------------------------------------------------------------------------------


def _key_after(key: Sequence[str]) -> str:
    return f"({', '.join(key)}) > ({', '.join('?' for _ in key)})"


def count_rows(tx: Tx, table: str) -> int:
    return int(tx.execute(f"SELECT COUNT(*) FROM {table}")[0][0])


def last_key(tx: Tx, table: str, key: Sequence[str]) -> tuple[Any, ...] | None:
    """The greatest primary key in ``table`` (None when empty)."""
    order = ", ".join(f"{k} DESC" for k in key)
    rows = tx.execute(f"SELECT {', '.join(key)} FROM {table} ORDER BY {order} LIMIT 1")
    return tuple(rows[0]) if rows else None


def rows_in_key_order(
    tx: Tx, table: str, columns: Sequence[str], key: Sequence[str], after: Sequence[Any] | None
) -> Iterator[tuple[Any, ...]]:
    """Every row of ``table`` (past the key ``after``) in primary-key order, streamed."""
    sql = f"SELECT {', '.join(columns)} FROM {table}"
    if after is not None:
        sql += f" WHERE {_key_after(key)}"
    sql += f" ORDER BY {', '.join(key)}"
    return tx.stream(sql, list(after or ()))


def delete_all(tx: Tx, table: str) -> None:
    tx.execute(f"DELETE FROM {table}")


def analyze(tx: Tx, dialect: str, table: str) -> None:
    """Fresh planner statistics after a bulk load (PostgreSQL; SQLite plans without them)."""
    if dialect == "postgresql":
        tx.execute(f"ANALYZE {table}")


def migrating_source(tx: Tx, dialect: str) -> str | None:
    """The source of an unfinished ``migrate`` into this database, if one was started."""
    if MIGRATING not in table_names(tx, dialect):
        return None
    rows = tx.execute(f"SELECT source FROM {MIGRATING}")
    return str(rows[0][0]) if rows else None


def start_migrating(tx: Tx, source: str) -> None:
    tx.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATING} (source TEXT NOT NULL)")
    tx.execute(f"DELETE FROM {MIGRATING}")
    tx.execute(f"INSERT INTO {MIGRATING} (source) VALUES (?)", [source])


def end_migrating(tx: Tx) -> None:
    tx.execute(f"DROP TABLE IF EXISTS {MIGRATING}")


# -- export reads ------------------------------------------------------------------------------


def stream_conversations(tx: Tx, user_id: str | None = None) -> Iterator[ConversationRow]:
    """Every conversation (or ``user_id``'s) by id."""
    if user_id is None:
        rows = tx.stream(f"SELECT {_CONV} FROM convostore_conversations ORDER BY id")
    else:
        rows = tx.stream(
            f"SELECT {_CONV} FROM convostore_conversations WHERE user_id = ? ORDER BY id",
            [user_id],
        )
    return (ConversationRow(*r) for r in rows)


def stream_all_messages(tx: Tx) -> Iterator[tuple[str, MessageRow]]:
    """Every message, by (conversation id, seq): one pass over the primary key."""
    rows = tx.stream(
        f"SELECT conversation_id, {_MSG} FROM convostore_messages ORDER BY conversation_id, seq"
    )
    return ((r[0], MessageRow(*r[1:])) for r in rows)


def stream_messages(tx: Tx, cid: str) -> Iterator[MessageRow]:
    rows = tx.stream(
        f"SELECT {_MSG} FROM convostore_messages WHERE conversation_id = ? ORDER BY seq", [cid]
    )
    return (MessageRow(*r) for r in rows)


def stream_changes(tx: Tx, cid: str | None = None) -> Iterator[tuple[str, ChangeRow]]:
    """The change rows of one conversation (or of all, by conversation id and seq)."""
    sql = "SELECT conversation_id, seq, kind, message_id, created_at FROM convostore_changes"
    if cid is None:
        rows = tx.stream(f"{sql} ORDER BY conversation_id, seq")
    else:
        rows = tx.stream(f"{sql} WHERE conversation_id = ? ORDER BY seq", [cid])
    return ((r[0], ChangeRow(*r[1:])) for r in rows)


def stream_memory_stores(tx: Tx, user_id: str | None = None) -> Iterator[MemoryStoreRow]:
    """Every memory store (or ``user_id``'s) by id."""
    if user_id is None:
        rows = tx.stream(f"SELECT {_STORE} FROM convostore_memory_stores ORDER BY id")
    else:
        rows = tx.stream(
            f"SELECT {_STORE} FROM convostore_memory_stores WHERE user_id = ? ORDER BY id",
            [user_id],
        )
    return (MemoryStoreRow(*r) for r in rows)


def _version_row(store_id: str, r: Sequence[Any]) -> MemoryVersionRow:
    seq, vid, entry_id, version, operation, path, size, created_at, redacted_at, content = r
    return MemoryVersionRow(
        store_id,
        seq,
        vid,
        entry_id,
        version,
        operation,
        path,
        size,
        created_at,
        redacted_at,
        None if content is None else bytes(content),
    )


def stream_memory_versions(
    tx: Tx, store_id: str | None = None
) -> Iterator[tuple[str, MemoryVersionRow]]:
    """The versions of one memory store (or of all, by store id), with their contents, by seq."""
    sql = f"SELECT store_id, {_VERSION} FROM convostore_memory_versions"
    if store_id is None:
        rows = tx.stream(f"{sql} ORDER BY store_id, seq")
    else:
        rows = tx.stream(f"{sql} WHERE store_id = ? ORDER BY seq", [store_id])
    return ((r[0], _version_row(r[0], r[1:])) for r in rows)


def stream_memory_entries(
    tx: Tx, store_id: str | None = None
) -> Iterator[tuple[str, MemoryEntryRow]]:
    """The live entries of one memory store (or of all, by store id), by path."""
    sql = f"SELECT store_id, {_ENTRY} FROM convostore_memory_entries"
    if store_id is None:
        rows = tx.stream(f"{sql} ORDER BY store_id, path")
    else:
        rows = tx.stream(f"{sql} WHERE store_id = ? ORDER BY path", [store_id])
    return ((r[0], MemoryEntryRow(r[0], *r[1:])) for r in rows)


# -- the restore path (import) -----------------------------------------------------------------


def changes_by_seq(tx: Tx, cid: str, first: int, last: int) -> dict[int, ChangeRow]:
    rows = tx.execute(
        "SELECT seq, kind, message_id, created_at FROM convostore_changes"
        " WHERE conversation_id = ? AND seq >= ? AND seq <= ?",
        [cid, first, last],
    )
    return {int(r[0]): ChangeRow(*r) for r in rows}


def insert_conversation_row(tx: Tx, row: ConversationRow) -> None:
    tx.execute(
        f"INSERT INTO convostore_conversations ({_CONV}) VALUES (?, ?, ?, ?, ?, ?, ?)", list(row)
    )


def messages_by_seq(tx: Tx, cid: str, first: int, last: int) -> dict[int, MessageRow]:
    rows = tx.execute(
        f"SELECT {_MSG} FROM convostore_messages WHERE conversation_id = ? AND seq >= ?"
        " AND seq <= ?",
        [cid, first, last],
    )
    return {int(r[0]): MessageRow(*r) for r in rows}


def restore_conversation_row(tx: Tx, row: ConversationRow) -> None:
    """Set every column of a conversation as given (``save_conversation`` keeps created_at)."""
    tx.execute(
        "UPDATE convostore_conversations SET user_id = ?, created_at = ?, last_message_at = ?,"
        " message_count = ?, next_seq = ?, metadata = ? WHERE id = ?",
        [
            row.user_id,
            row.created_at,
            row.last_message_at,
            row.message_count,
            row.next_seq,
            row.metadata,
            row.id,
        ],
    )


def memory_versions_by_seq(
    tx: Tx, store_id: str, first: int, last: int
) -> dict[int, MemoryVersionRow]:
    """The versions of a memory store from seq ``first`` to ``last``, with their contents."""
    rows = tx.execute(
        f"SELECT {_VERSION} FROM convostore_memory_versions WHERE store_id = ? AND seq >= ?"
        " AND seq <= ?",
        [store_id, first, last],
    )
    return {int(r[0]): _version_row(store_id, r) for r in rows}


def delete_memory_entries(tx: Tx, store_id: str) -> None:
    tx.execute("DELETE FROM convostore_memory_entries WHERE store_id = ?", [store_id])


def restore_memory_store_row(tx: Tx, row: MemoryStoreRow) -> None:
    """Set a memory store's counters and times as given."""
    tx.execute(
        "UPDATE convostore_memory_stores SET updated_at = ?, entry_count = ?, total_size = ?,"
        " next_seq = ? WHERE id = ?",
        [row.updated_at, row.entry_count, row.total_size, row.next_seq, row.id],
    )


# -- check -------------------------------------------------------------------------------------


def integrity_problems(tx: Tx, dialect: str) -> list[str]:
    """What the database itself finds wrong: SQLite's ``integrity_check``; on PostgreSQL,
    indexes left invalid (a failed concurrent build) in the current schema."""
    if dialect == "sqlite":
        rows = tx.execute("PRAGMA integrity_check")
        return [str(r[0]) for r in rows if r[0] != "ok"]
    rows = tx.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready)"
    )
    return [f"index {r[0]} is not valid (rebuild it with REINDEX)" for r in rows]


ORPHANS = (
    ("convostore_messages", "conversation_id", "convostore_conversations"),
    ("convostore_changes", "conversation_id", "convostore_conversations"),
    ("convostore_memory_versions", "store_id", "convostore_memory_stores"),
    ("convostore_memory_entries", "store_id", "convostore_memory_stores"),
)
"""Rows that belong to a row of another table: (table, its column naming the parent, the
parent table)."""


def orphans(tx: Tx, table: str, column: str, parent: str, limit: int) -> list[tuple[str, int]]:
    """Rows of ``table`` whose parent (``column`` = ``parent``'s id) does not exist: (the
    parent's id, how many), for ``ORPHANS``."""
    rows = tx.execute(
        f"SELECT t.{column}, COUNT(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM {parent} p"
        f" WHERE p.id = t.{column}) GROUP BY t.{column} ORDER BY t.{column} LIMIT ?",
        [limit],
    )
    return [(r[0], int(r[1])) for r in rows]


# -- prune -------------------------------------------------------------------------------------


def conversations_older_than(
    tx: Tx, cutoff: int, user_id: str | None, after: tuple[int, str] | None, limit: int
) -> list[ConversationRow]:
    """Up to ``limit`` conversations last active before ``cutoff``, oldest first, past the
    (last_message_at, id) ``after``: a range of the by-time (or by-user) index."""
    where, params = ["last_message_at < ?"], list[Any]([cutoff])
    if user_id is not None:
        where.append("user_id = ?")
        params.append(user_id)
    if after is not None:
        where.append("(last_message_at, id) > (?, ?)")
        params += list(after)
    rows = tx.execute(
        f"SELECT {_CONV} FROM convostore_conversations WHERE {' AND '.join(where)}"
        " ORDER BY last_message_at, id LIMIT ?",
        [*params, limit],
    )
    return [ConversationRow(*r) for r in rows]


def conversations_longer_than(
    tx: Tx, keep: int, user_id: str | None, after: str | None, limit: int
) -> list[ConversationRow]:
    """Up to ``limit`` conversations holding more than ``keep`` messages, by id past ``after``."""
    where, params = ["message_count > ?"], list[Any]([keep])
    if user_id is not None:
        where.append("user_id = ?")
        params.append(user_id)
    if after is not None:
        where.append("id > ?")
        params.append(after)
    rows = tx.execute(
        f"SELECT {_CONV} FROM convostore_conversations WHERE {' AND '.join(where)}"
        " ORDER BY id LIMIT ?",
        [*params, limit],
    )
    return [ConversationRow(*r) for r in rows]


def oldest_message_ids(tx: Tx, cid: str, count: int) -> list[tuple[int, str]]:
    """The (seq, id) of the ``count`` oldest messages."""
    rows = tx.execute(
        "SELECT seq, id FROM convostore_messages WHERE conversation_id = ? ORDER BY seq LIMIT ?",
        [cid, count],
    )
    return [(int(r[0]), r[1]) for r in rows]


def delete_messages_through(tx: Tx, cid: str, seq: int) -> int:
    rows = tx.execute(
        "DELETE FROM convostore_messages WHERE conversation_id = ? AND seq <= ? RETURNING seq",
        [cid, seq],
    )
    return len(rows)


# -- stats -------------------------------------------------------------------------------------


def table_bytes(tx: Tx, dialect: str, tables: Sequence[str]) -> dict[str, int] | None:
    """Bytes each table takes with its indexes (None where the database cannot tell: an
    SQLite built without the ``dbstat`` table)."""
    if not tables:
        return {}
    marks = ", ".join("?" for _ in tables)
    if dialect == "postgresql":
        rows = tx.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            f" WHERE n.nspname = current_schema() AND c.relname IN ({marks})",
            list(tables),
        )
        return {r[0]: int(r[1]) for r in rows}
    try:
        rows = tx.execute(
            "SELECT COALESCE(i.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d"
            " LEFT JOIN sqlite_master i ON i.name = d.name AND i.type = 'index'"
            f" WHERE COALESCE(i.tbl_name, d.name) IN ({marks})"
            " GROUP BY COALESCE(i.tbl_name, d.name)",
            list(tables),
        )
    except Exception:  # no dbstat in this SQLite build
        return None
    return {r[0]: int(r[1]) for r in rows}


def conversations_by_prefix_stats(tx: Tx, prefix: str, upper: str | None) -> tuple[int, int]:
    """How many conversations have an id starting with ``prefix``, and their messages."""
    where, params = "id >= ?", list[Any]([prefix])
    if upper is not None:
        where += " AND id < ?"
        params.append(upper)
    rows = tx.execute(
        f"SELECT COUNT(*), COALESCE(SUM(message_count), 0) FROM convostore_conversations"
        f" WHERE {where}",
        params,
    )
    return int(rows[0][0]), int(rows[0][1])
