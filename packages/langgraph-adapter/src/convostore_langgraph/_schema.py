"""Every SQL statement of the package: the adapter's tables, the saver's statements and the
store's, each a named function that runs on a ``Tx`` of the core backend (``?`` placeholders
on SQLite and PostgreSQL). Every difference between the two databases is in this module: a
function that needs one takes the backend's ``dialect``. No other module holds SQL text (a
test scans them)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from convostore.spi import SQLITE_ONLY, Backend, Tx

from ._blobs import _Blob, _BlobKey, _BlobRow
from ._checks import _dump_metadata
from ._filters import key_text

COMPONENT = "convostore-langgraph"
THREAD_KEY = "threadId"
"""The key under ``managedBy`` naming the thread a conversation shows."""

STEPS: list[list[str]] = [
    [
        # One row per checkpoint, without its channel values (those live in lg_blobs).
        """CREATE TABLE lg_checkpoints (
            thread_id TEXT {collate} NOT NULL,
            ns TEXT {collate} NOT NULL,
            checkpoint_id TEXT {collate} NOT NULL,
            parent_id TEXT {collate},
            ctype TEXT NOT NULL,
            checkpoint {blob} NOT NULL,
            metadata TEXT NOT NULL,
            run_id TEXT {collate},
            PRIMARY KEY (thread_id, ns, checkpoint_id)
        )""",
        "CREATE INDEX lg_checkpoints_by_run ON lg_checkpoints (run_id)",
        "CREATE INDEX lg_checkpoints_by_id ON lg_checkpoints (checkpoint_id)",
        # One row per (channel, version): unchanged channels are never rewritten. A row with a
        # base is a delta of a list: the base's first ``keep`` items, then this row's items.
        """CREATE TABLE lg_blobs (
            thread_id TEXT {collate} NOT NULL,
            ns TEXT {collate} NOT NULL,
            channel TEXT {collate} NOT NULL,
            version TEXT {collate} NOT NULL,
            type TEXT NOT NULL,
            data {blob},
            base TEXT {collate},
            keep INTEGER,
            depth INTEGER NOT NULL DEFAULT 0,
            tail BIGINT NOT NULL DEFAULT 0,
            snap BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (thread_id, ns, channel, version)
        )""",
        # Pending writes. No foreign key: a superstep's writes may commit before its checkpoint.
        """CREATE TABLE lg_writes (
            thread_id TEXT {collate} NOT NULL,
            ns TEXT {collate} NOT NULL,
            checkpoint_id TEXT {collate} NOT NULL,
            task_id TEXT {collate} NOT NULL,
            idx INTEGER NOT NULL,
            task_path TEXT {collate} NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            type TEXT,
            data {blob},
            PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
        )""",
        # The BaseStore. ``prefix`` is the namespace joined with "." (labels cannot hold one).
        """CREATE TABLE lg_store (
            prefix TEXT {collate} NOT NULL,
            key TEXT {collate} NOT NULL,
            value TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            expires_at BIGINT,
            ttl_minutes DOUBLE PRECISION,
            PRIMARY KEY (prefix, key)
        )""",
        "CREATE INDEX lg_store_by_time ON lg_store (prefix, updated_at)",
        "CREATE INDEX lg_store_by_expiry ON lg_store (expires_at)",
    ],
    [
        # Each index costs every put a page write. The one by checkpoint_id served only
        # list(config=None) across threads (now a scan); checkpoints without a run_id need no
        # entry in the one by run_id (delete_for_runs never looks for NULL).
        "DROP INDEX lg_checkpoints_by_id",
        "DROP INDEX lg_checkpoints_by_run",
        "CREATE INDEX lg_checkpoints_by_run ON lg_checkpoints (run_id) WHERE run_id IS NOT NULL",
        # On SQLite, pending writes in one b-tree (WITHOUT ROWID: the primary key holds the
        # rows), not a table and its key index: half the pages per put_writes.
        SQLITE_ONLY
        + """CREATE TABLE lg_writes_v2 (
            thread_id TEXT NOT NULL,
            ns TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            type TEXT,
            data BLOB,
            PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
        ) WITHOUT ROWID""",
        SQLITE_ONLY + "INSERT INTO lg_writes_v2 SELECT thread_id, ns, checkpoint_id, task_id, idx,"
        " task_path, channel, type, data FROM lg_writes",
        SQLITE_ONLY + "DROP TABLE lg_writes",
        SQLITE_ONLY + "ALTER TABLE lg_writes_v2 RENAME TO lg_writes",
    ],
]


def migrate(backend: Backend) -> None:
    """Create or upgrade the adapter's tables on ``backend`` (idempotent, transactional)."""
    backend.migrate(COMPONENT, STEPS)


# -- the saver's statements ----------------------------------------------------------------

CheckpointRow = tuple[Any, ...]
"""thread_id, ns, checkpoint_id, parent_id, ctype, checkpoint, metadata."""
WriteRow = tuple[str, str, str, bytes, str, int]
"""task_id, channel, type, data, task_path, idx: a pending write as stored."""
CheckpointKey = tuple[str, str, str]
"""thread_id, ns, checkpoint_id."""

_CKPT_COLS = "thread_id, ns, checkpoint_id, parent_id, ctype, checkpoint, metadata"
_BLOB_COLS = (
    "b.thread_id, b.ns, b.channel, b.version, b.type, b.data, b.base, b.keep, b.depth, b.tail,"
    " b.snap"
)
_BLOB_INSERT = (
    "INSERT INTO lg_blobs (thread_id, ns, channel, version, type, data, base, keep, depth,"
    " tail, snap)"
)
_BLOB_MARKS = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
_BLOB_CONFLICT = "ON CONFLICT (thread_id, ns, channel, version) DO NOTHING"
_CKPT_UPSERT = f"INSERT INTO lg_checkpoints ({_CKPT_COLS}, run_id)"
_CKPT_CONFLICT = (
    "ON CONFLICT (thread_id, ns, checkpoint_id) DO UPDATE SET"
    " parent_id = excluded.parent_id, ctype = excluded.ctype,"
    " checkpoint = excluded.checkpoint, metadata = excluded.metadata, run_id = excluded.run_id"
)
_WRITES_INSERT = (
    "INSERT INTO lg_writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel,"
    " type, data)"
)
_WRITES_IGNORE = "ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO NOTHING"
_WRITES_OVERWRITE = (
    "ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) DO UPDATE SET"
    " channel = excluded.channel, type = excluded.type, data = excluded.data,"
    " task_path = excluded.task_path"
)
_GET = (
    "SELECT c.thread_id, c.ns, c.checkpoint_id, c.parent_id, c.ctype, c.checkpoint, c.metadata,"
    " w.task_id, w.channel, w.type, w.data, w.task_path, w.idx FROM {} c"
    " LEFT JOIN lg_writes w ON w.thread_id = c.thread_id AND w.ns = c.ns"
    " AND w.checkpoint_id = c.checkpoint_id"
)
_GET_BY_ID = _GET.format("lg_checkpoints") + (
    " WHERE c.thread_id = ? AND c.ns = ? AND c.checkpoint_id = ?"
)
_GET_LATEST = _GET.format(
    "(SELECT * FROM lg_checkpoints WHERE thread_id = ? AND ns = ?"
    " ORDER BY checkpoint_id DESC LIMIT 1)"
)
_BY_KEY = "WHERE thread_id = ? AND ns = ? AND checkpoint_id = ?"


@functools.cache
def _insert_sql(head: str, count: int, tail: str, relax: bool, rows: int = 1) -> str:
    """``head VALUES (?, ...), ... tail`` for ``rows`` rows; with ``relax`` (PostgreSQL only)
    the statement also sets ``synchronous_commit=off`` for its transaction, saving a separate
    ``SET LOCAL``."""
    marks = f"({', '.join('?' * count)})"
    if relax and rows == 1:
        return (
            "WITH relax AS (SELECT set_config('synchronous_commit', 'off', true))"
            f" {head} SELECT {marks[1:-1]} FROM relax {tail}"
        )
    if relax:
        return (
            "WITH relax AS (SELECT set_config('synchronous_commit', 'off', true))"
            f" {head} SELECT v.* FROM relax, (VALUES {', '.join([marks] * rows)}) v {tail}"
        )
    return f"{head} VALUES {', '.join([marks] * rows)} {tail}"


def insert_sql(  # noqa: PLR0917 - the statement's parts
    dialect: str, durable: bool, head: str, count: int, tail: str, rows: int = 1
) -> str:
    """An insert of ``rows`` rows of ``count`` parameters; not ``durable`` relaxes the commit on
    PostgreSQL."""
    return _insert_sql(head, count, tail, not durable and dialect == "postgresql", rows)


def _text_param(dialect: str) -> str:
    """A text parameter compared with stored keys inside a recursive query: PostgreSQL must be
    told its type and the byte-order collation of the keys."""
    return 'CAST(? AS TEXT) COLLATE "C"' if dialect == "postgresql" else "?"


def _write_row(r: Sequence[Any], at: int) -> WriteRow:
    """The pending write in columns ``at`` to ``at + 5`` of ``r``."""
    data = r[at + 3]
    return (
        r[at],
        r[at + 1],
        r[at + 2],
        bytes(data) if data is not None else b"",
        *r[at + 4 : at + 6],
    )


def checkpoint_with_writes(
    tx: Tx, thread_id: str, ns: str, checkpoint_id: str | None
) -> tuple[CheckpointRow, list[WriteRow]] | None:
    """The checkpoint (the namespace's latest without ``checkpoint_id``) and its pending
    writes, unsorted, in one statement."""
    if checkpoint_id:
        rows = tx.execute(_GET_BY_ID, [thread_id, ns, checkpoint_id])
    else:
        rows = tx.execute(_GET_LATEST, [thread_id, ns])
    if not rows:
        return None
    return rows[0][:7], [_write_row(r, 7) for r in rows if r[7] is not None]


class CheckpointQuery(NamedTuple):
    """What ``list`` asks for; ``None`` leaves a part open."""

    thread_id: str | None = None
    ns: str | None = None
    checkpoint_id: str | None = None
    before: str | None = None
    filter: Mapping[str, Any] | None = None


def checkpoint_page(
    tx: Tx, query: CheckpointQuery, after: tuple[str, str, str] | None, limit: int
) -> list[CheckpointRow]:
    """Up to ``limit`` checkpoints newest first (by id, then thread and namespace), from
    below ``after`` = (checkpoint_id, thread_id, ns). A metadata ``filter`` only narrows:
    the caller checks each row (see ``filter_conditions``)."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("thread_id = ?", query.thread_id),
        ("ns = ?", query.ns),
        ("checkpoint_id = ?", query.checkpoint_id),
        ("checkpoint_id < ?", query.before),
    ):
        if value is not None:
            where.append(column)
            params.append(value)
    if query.filter:
        conds, values = filter_conditions(query.filter)
        where += conds
        params += values
    if after is not None:
        where.append("(checkpoint_id, thread_id, ns) < (?, ?, ?)")
        params += list(after)
    sql = (
        f"SELECT {_CKPT_COLS} FROM lg_checkpoints"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY checkpoint_id DESC, thread_id DESC, ns DESC LIMIT ?"
    )
    return tx.execute(sql, [*params, limit])


def fetch_blobs(tx: Tx, dialect: str, keys: Iterable[_BlobKey]) -> dict[_BlobKey, _BlobRow]:
    """The blob rows for ``keys`` and every delta base they rest on, one statement per 500
    keys."""
    out: dict[_BlobKey, _BlobRow] = {}
    ordered = sorted(keys)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        mark = f"({', '.join([_text_param(dialect)] * 4)})"
        sql = (
            "WITH RECURSIVE need(thread_id, ns, channel, version) AS ("
            f" VALUES {', '.join(mark for _ in chunk)}"
            " UNION SELECT b.thread_id, b.ns, b.channel, b.base FROM lg_blobs b JOIN need n"
            " ON b.thread_id = n.thread_id AND b.ns = n.ns AND b.channel = n.channel"
            " AND b.version = n.version WHERE b.base IS NOT NULL)"
            f" SELECT {_BLOB_COLS} FROM lg_blobs b JOIN need n"
            " ON b.thread_id = n.thread_id AND b.ns = n.ns AND b.channel = n.channel"
            " AND b.version = n.version"
        )
        for r in tx.execute(sql, [p for key in chunk for p in key]):
            out[(r[0], r[1], r[2], r[3])] = _BlobRow(
                r[4], None if r[5] is None else bytes(r[5]), r[6], r[7], r[8], r[9], r[10]
            )
    return out


def fetch_writes(
    tx: Tx, ids: Sequence[CheckpointKey], channels: Sequence[str] | None = None
) -> dict[CheckpointKey, list[WriteRow]]:
    """Pending writes of the checkpoints ``ids`` (of ``channels`` only, if given), unsorted."""
    out: dict[CheckpointKey, list[WriteRow]] = {}
    if not ids:
        return out
    groups: dict[tuple[str, str], list[str]] = {}
    for thread_id, ns, cid in ids:
        groups.setdefault((thread_id, ns), []).append(cid)
    clauses: list[str] = []
    params: list[Any] = []
    for (thread_id, ns), cids in groups.items():
        marks = ", ".join("?" for _ in cids)
        clauses.append(f"(thread_id = ? AND ns = ? AND checkpoint_id IN ({marks}))")
        params += [thread_id, ns, *cids]
    sql = (
        "SELECT thread_id, ns, checkpoint_id, task_id, channel, type, data, task_path, idx"
        f" FROM lg_writes WHERE ({' OR '.join(clauses)})"
    )
    if channels is not None:
        sql += f" AND channel IN ({', '.join('?' for _ in channels)})"
        params += list(channels)
    for r in tx.execute(sql, params):
        out.setdefault((r[0], r[1], r[2]), []).append(_write_row(r, 3))
    return out


def _blob_params(thread_id: str, ns: str, b: _Blob) -> list[Any]:
    head = [thread_id, ns, b.channel, b.version, b.type, b.data]
    return [*head, b.base, b.keep, b.depth, b.tail, b.snap]


_BASE_GONE = "the base of a delta blob is gone"
_BASE_CHECK = (
    "SELECT 1 FROM lg_blobs WHERE thread_id = ? AND ns = ? AND channel = ? AND version = ?"
)
_DELTA_IF_BASE = (
    f"{_BLOB_INSERT} SELECT {_BLOB_MARKS} WHERE EXISTS ({_BASE_CHECK}{{lock}})"
    f" {_BLOB_CONFLICT} RETURNING version"
)
# PostgreSQL: a missing base fails the transaction (text cast to boolean), so the insert needs
# no answer before the COMMIT; the caller then stores the blob whole (``base_was_gone``).
_DELTA_OR_FAIL = (
    f"{_BLOB_INSERT} SELECT {_BLOB_MARKS} WHERE CAST(CASE WHEN EXISTS ({_BASE_CHECK}"
    f" FOR KEY SHARE) THEN 'true' ELSE '{_BASE_GONE}' END AS BOOLEAN) {_BLOB_CONFLICT}"
)


def insert_delta(tx: Tx, dialect: str, thread_id: str, ns: str, blob: _Blob) -> bool:
    """Insert a delta blob row if its base row is still there (another process may have
    pruned it); whether it is stored now. On PostgreSQL it is sent without waiting and a
    missing base fails the transaction instead (see ``base_was_gone``): True."""
    params = [*_blob_params(thread_id, ns, blob), thread_id, ns, blob.channel, blob.base]
    if dialect == "postgresql":
        tx.send(_DELTA_OR_FAIL, params)
        return True
    return bool(tx.execute(_DELTA_IF_BASE.format(lock=tx.lock_suffix), params))


def base_was_gone(exc: BaseException) -> bool:
    """Whether a failed write failed on ``insert_delta``'s missing base (PostgreSQL)."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    return getattr(cause, "sqlstate", None) == "22P02" and _BASE_GONE in str(
        getattr(diag, "message_primary", "") or ""
    )


def insert_blobs(tx: Tx, thread_id: str, ns: str, blobs: Sequence[_Blob]) -> None:
    """Insert whole blob rows (a version already stored is kept)."""
    if blobs:
        tx.executemany(
            f"{_BLOB_INSERT} VALUES ({_BLOB_MARKS}) {_BLOB_CONFLICT}",
            [_blob_params(thread_id, ns, b) for b in blobs],
        )


def upsert_checkpoint(
    tx: Tx, dialect: str, row: Sequence[Any], run_id: str | None, *, durable: bool
) -> None:
    """Insert or replace the checkpoint ``row`` (thread_id, ns, checkpoint_id, parent_id,
    ctype, checkpoint, metadata), in one statement, sent without waiting (its error comes
    with the next round trip or the commit)."""
    sql = insert_sql(dialect, durable, _CKPT_UPSERT, 8, _CKPT_CONFLICT)
    tx.relaxed_commit |= not durable
    tx.send(sql, [*row, run_id])


WRITES_PER_STATEMENT = 500  # 9 parameters a row: within both databases' limits


def insert_writes(
    tx: Tx,
    dialect: str,
    chunks: Sequence[Sequence[Sequence[Any]]],
    *,
    overwrite: bool,
    durable: bool,
) -> None:
    """Insert pending writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel,
    type, data), one statement per chunk of ``write_chunks``: a stored key keeps its first
    write, or with ``overwrite`` takes this one."""
    conflict = _WRITES_OVERWRITE if overwrite else _WRITES_IGNORE
    tx.relaxed_commit |= not durable
    for chunk in chunks:
        sql = insert_sql(dialect, durable, _WRITES_INSERT, 9, conflict, len(chunk))
        tx.send(sql, [p for row in chunk for p in row])


def write_chunks(rows: Sequence[Sequence[Any]], *, overwrite: bool) -> list[list[Sequence[Any]]]:
    """``rows`` in statements of ``WRITES_PER_STATEMENT``, each key (task_id, idx) once: its
    first row, or its last with ``overwrite`` (what one insert per row would leave)."""
    kept: dict[tuple[Any, Any], Sequence[Any]] = {}
    for row in rows:
        key = (row[3], row[4])
        if overwrite or key not in kept:
            kept.pop(key, None)
            kept[key] = row
    unique = list(kept.values())
    return [
        unique[i : i + WRITES_PER_STATEMENT] for i in range(0, len(unique), WRITES_PER_STATEMENT)
    ]


def delete_thread(tx: Tx, thread_id: str) -> None:
    """Delete every checkpoint, write and blob of the thread, in every namespace."""
    for table in ("lg_checkpoints", "lg_blobs", "lg_writes"):
        tx.execute(f"DELETE FROM {table} WHERE thread_id = ?", [thread_id])


def checkpoints_of_runs(tx: Tx, run_ids: Sequence[str]) -> list[CheckpointKey]:
    """The checkpoints whose metadata names one of ``run_ids``."""
    rows = tx.execute(
        "SELECT thread_id, ns, checkpoint_id FROM lg_checkpoints"
        f" WHERE run_id IN ({', '.join('?' for _ in run_ids)})",
        run_ids,
    )
    return [(r[0], r[1], r[2]) for r in rows]


def delete_checkpoints(tx: Tx, keys: Sequence[CheckpointKey]) -> None:
    """Delete these checkpoints with their pending writes (not their blobs)."""
    tx.executemany(f"DELETE FROM lg_writes {_BY_KEY}", keys)
    tx.executemany(f"DELETE FROM lg_checkpoints {_BY_KEY}", keys)


def detach_parents(tx: Tx, keys: Sequence[CheckpointKey]) -> None:
    """Make these checkpoints roots (their parents are gone)."""
    tx.executemany(f"UPDATE lg_checkpoints SET parent_id = NULL {_BY_KEY}", keys)


def encoded_checkpoints(tx: Tx, thread_id: str) -> list[tuple[str, str, bytes]]:
    """(ns, ctype, checkpoint) of every checkpoint of the thread."""
    rows = tx.execute(
        "SELECT ns, ctype, checkpoint FROM lg_checkpoints WHERE thread_id = ?", [thread_id]
    )
    return [(r[0], r[1], bytes(r[2])) for r in rows]


def checkpoints_newest_first(tx: Tx, thread_id: str) -> list[tuple[str, str, str]]:
    """(ns, checkpoint_id, metadata) of every checkpoint of the thread, by namespace, newest
    first."""
    rows = tx.execute(
        "SELECT ns, checkpoint_id, metadata FROM lg_checkpoints WHERE thread_id = ?"
        " ORDER BY ns, checkpoint_id DESC",
        [thread_id],
    )
    return [(r[0], r[1], r[2]) for r in rows]


def blob_bases(tx: Tx, thread_id: str) -> dict[tuple[str, str, str], str | None]:
    """{(ns, channel, version): the version it is a delta of, or None} for the thread."""
    rows = tx.execute(
        "SELECT ns, channel, version, base FROM lg_blobs WHERE thread_id = ?", [thread_id]
    )
    return {(r[0], r[1], r[2]): r[3] for r in rows}


def delete_blobs(tx: Tx, keys: Sequence[_BlobKey]) -> None:
    """Delete these (thread_id, ns, channel, version) blob rows."""
    if keys:
        tx.executemany(
            "DELETE FROM lg_blobs WHERE thread_id = ? AND ns = ? AND channel = ? AND version = ?",
            keys,
        )


def thread_heads(tx: Tx) -> list[tuple[str, str]]:
    """Each thread's newest root checkpoint id (ids are UUIDv6: they carry their time)."""
    rows = tx.execute(
        "SELECT thread_id, MAX(checkpoint_id) FROM lg_checkpoints WHERE ns = '' GROUP BY thread_id"
    )
    return [(r[0], r[1]) for r in rows]


def holds_sqlite_saver_tables(conn: sqlite3.Connection) -> bool:
    """Whether an SQLite file (``import-from``'s source) is LangGraph's ``SqliteSaver``'s."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchall()
    return bool(found)


def saver_checkpoint_keys(cursor: Any) -> list[tuple[Any, ...]]:
    """(thread_id, checkpoint_ns, checkpoint_id) of every checkpoint in LangGraph's own
    ``SqliteSaver`` or ``PostgresSaver`` tables (``import-from``'s source; ``cursor`` a DB-API
    cursor on it that returns tuples), as stored: the caller checks their types."""
    cursor.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints")
    return [tuple(row) for row in cursor.fetchall()]


def copy_thread(tx: Tx, source: str, target: str) -> None:
    """Copy every checkpoint, write and blob of ``source`` to ``target`` (ids kept, rows the
    target has already kept)."""
    tx.execute(
        f"INSERT INTO lg_checkpoints ({_CKPT_COLS}, run_id) SELECT ?, ns, checkpoint_id,"
        " parent_id, ctype, checkpoint, metadata, run_id FROM lg_checkpoints"
        " WHERE thread_id = ? ON CONFLICT (thread_id, ns, checkpoint_id) DO NOTHING",
        [target, source],
    )
    tx.execute(
        f"{_BLOB_INSERT} SELECT ?, ns, channel, version, type, data, base, keep,"
        f" depth, tail, snap FROM lg_blobs WHERE thread_id = ? {_BLOB_CONFLICT}",
        [target, source],
    )
    tx.execute(
        f"{_WRITES_INSERT} SELECT ?, ns, checkpoint_id, task_id, idx, task_path,"
        f" channel, type, data FROM lg_writes WHERE thread_id = ? {_WRITES_IGNORE}",
        [target, source],
    )


def parent_of(tx: Tx, thread_id: str, ns: str, checkpoint_id: str | None) -> str | None:
    """The parent id of the checkpoint (the namespace's latest without ``checkpoint_id``)."""
    if checkpoint_id:
        rows = tx.execute(
            f"SELECT parent_id FROM lg_checkpoints {_BY_KEY}", [thread_id, ns, checkpoint_id]
        )
    else:
        rows = tx.execute(
            "SELECT parent_id FROM lg_checkpoints WHERE thread_id = ? AND ns = ?"
            " ORDER BY checkpoint_id DESC LIMIT 1",
            [thread_id, ns],
        )
    return rows[0][0] if rows else None


def ancestors(
    tx: Tx, dialect: str, thread_id: str, ns: str, *, first: str, count: int
) -> list[tuple[str, str | None, str, bytes]]:
    """Up to ``count`` checkpoints up the parent chain from ``first`` (itself included),
    nearest first: (checkpoint_id, parent_id, ctype, checkpoint), in one recursive statement."""
    rows = tx.execute(
        "WITH RECURSIVE chain(checkpoint_id, lvl) AS ("
        f" SELECT {_text_param(dialect)}, 0"
        " UNION ALL SELECT c.parent_id, chain.lvl + 1 FROM lg_checkpoints c"
        " JOIN chain ON c.thread_id = ? AND c.ns = ? AND c.checkpoint_id = chain.checkpoint_id"
        " WHERE c.parent_id IS NOT NULL AND chain.lvl < ?)"
        " SELECT c.checkpoint_id, c.parent_id, c.ctype, c.checkpoint, chain.lvl"
        " FROM chain JOIN lg_checkpoints c ON c.thread_id = ? AND c.ns = ?"
        " AND c.checkpoint_id = chain.checkpoint_id ORDER BY chain.lvl",
        [first, thread_id, ns, count - 1, thread_id, ns],
    )
    return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]


def filter_conditions(filter: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """A condition that narrows a metadata filter in SQL to a superset of the matches (the
    exact test is ``_metadata_matches``, in Python), the same on SQLite and PostgreSQL and
    unable to fail on any stored text: it never parses stored metadata (PostgreSQL's
    ``jsonb`` refuses a NUL or a lone surrogate, which would fail the query for every
    thread). A row matches when its JSON text holds ``"key": value`` for each string value and
    ``"key": `` for each number or boolean (``1`` equals ``1.0`` and ``True``; a dotted key by
    the end of its last part, ``_filters.key_text``), or when it holds a ``\\u`` escape (then
    a value may be written otherwise). ``None``, objects and arrays, and terms that cannot be
    sent (a lone surrogate), narrow nothing. Keys are checked (``_checks._metadata_filter``)."""
    terms: list[str] = []
    for key, value in filter.items():
        if isinstance(value, str):
            text = key_text(key, _dump_metadata) + _dump_metadata(value)
        elif isinstance(value, (int, float)):
            text = key_text(key, _dump_metadata)
        else:
            continue
        try:
            text.encode()
        except UnicodeEncodeError:
            continue
        terms.append(_like(text))
    if not terms:
        return [], []
    like = "metadata LIKE ? ESCAPE '\\'"
    either = f"({like} OR ({' AND '.join(like for _ in terms)}))"
    return [either], ["%\\\\u%", *terms]


def _like(text: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching any text that contains ``text``."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# -- the store's statements ----------------------------------------------------------------

StoreRow = tuple[Any, ...]
"""prefix, key, value, created_at, updated_at, ttl_minutes."""
_STORE_COLS = "prefix, key, value, created_at, updated_at, ttl_minutes"
_ALIVE = "(expires_at IS NULL OR expires_at > ?)"
# The store's reads take ``alive``: the time by which an expired item is left out, or None to
# return it until a sweep deletes it.


def store_get(tx: Tx, prefix: str, key: str, alive: int | None) -> StoreRow | None:
    """The item at (prefix, key) (unless it expired by ``alive``)."""
    sql = f"SELECT {_STORE_COLS} FROM lg_store WHERE prefix = ? AND key = ?"
    params: list[Any] = [prefix, key]
    if alive is not None:
        sql += f" AND {_ALIVE}"
        params.append(alive)
    rows = tx.execute(sql, params)
    return rows[0] if rows else None


def store_search(
    tx: Tx,
    prefix: str | None,
    contains: Sequence[str],
    alive: int | None,
    page: tuple[int, int] | None,
) -> list[StoreRow]:
    """Items under the namespace ``prefix`` (itself and its children, never a sibling that
    merely starts alike; everything for ``None``) whose value text holds every text of
    ``contains`` (and that had not expired by ``alive``), newest first, then by namespace and
    key; ``page`` is (limit, offset), applied after all of these."""
    where: list[str] = []
    params: list[Any] = []
    if alive is not None:
        where.append(_ALIVE)
        params.append(alive)
    if prefix:
        # "/" is the character after ".", so the range is exactly the "prefix." children
        where.append("(prefix = ? OR (prefix > ? AND prefix < ?))")
        params += [prefix, prefix + ".", prefix + "/"]
    for text in contains:
        where.append("value LIKE ? ESCAPE '\\'")
        params.append(_like(text))
    sql = (
        f"SELECT {_STORE_COLS} FROM lg_store"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY updated_at DESC, prefix, key"
    )
    if page is not None:
        sql += " LIMIT ? OFFSET ?"
        params += list(page)
    return tx.execute(sql, params)


def store_prefixes(tx: Tx, alive: int | None) -> list[str]:
    """Every namespace (joined with ".") that holds an item (one not expired by ``alive``)."""
    if alive is None:
        return [r[0] for r in tx.execute("SELECT DISTINCT prefix FROM lg_store")]
    return [
        r[0] for r in tx.execute(f"SELECT DISTINCT prefix FROM lg_store WHERE {_ALIVE}", [alive])
    ]


def store_put(
    tx: Tx, prefix: str, key: str, value: str, *, now: int, expires: int | None, ttl: float | None
) -> None:
    """Insert or replace an item; its ``created_at`` stays unless the old one had expired."""
    tx.execute(
        "INSERT INTO lg_store (prefix, key, value, created_at, updated_at,"
        " expires_at, ttl_minutes) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value,"
        " updated_at = excluded.updated_at, expires_at = excluded.expires_at,"
        " ttl_minutes = excluded.ttl_minutes,"
        " created_at = CASE WHEN lg_store.expires_at IS NOT NULL"
        " AND lg_store.expires_at <= excluded.updated_at"
        " THEN excluded.created_at ELSE lg_store.created_at END",
        [prefix, key, value, now, now, expires, ttl],
    )


def store_delete(tx: Tx, prefix: str, key: str) -> None:
    tx.execute("DELETE FROM lg_store WHERE prefix = ? AND key = ?", [prefix, key])


def store_expire_at(tx: Tx, rows: Sequence[tuple[int, str, str]]) -> None:
    """Set (expires_at, prefix, key) for each of ``rows``."""
    tx.executemany("UPDATE lg_store SET expires_at = ? WHERE prefix = ? AND key = ?", rows)


def store_sweep(tx: Tx, now: int) -> int:
    """Delete the items expired by ``now``; how many went."""
    return len(
        tx.execute(
            "DELETE FROM lg_store WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING key",
            [now],
        )
    )
