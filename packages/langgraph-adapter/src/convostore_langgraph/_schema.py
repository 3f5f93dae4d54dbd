"""The adapter's tables and the saver's statements, with every difference between the two
databases in this module; they run through the core backend (``?`` placeholders on SQLite
and PostgreSQL). (The store's few statements are still in ``store.py``; the saver's simple,
dialect-free ones are still next to their callers in ``saver.py``.)"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from convostore.spi import SQLITE_ONLY, Backend

from ._codec import _dump_metadata

COMPONENT = "convostore-langgraph"

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

_CKPT_COLS = "thread_id, ns, checkpoint_id, parent_id, ctype, checkpoint, metadata"
_BLOB_COLS = "b.thread_id, b.ns, b.channel, b.version, b.type, b.data, b.base, b.keep, b.depth, b.tail, b.snap"
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
_BLOB_INSERT = "thread_id, ns, channel, version, type, data, base, keep, depth, tail, snap"
_BLOB_MARKS = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"


@functools.cache
def _insert_sql(head: str, count: int, tail: str, relax: bool) -> str:
    """``head VALUES (?, ...) tail``; with ``relax`` (PostgreSQL only) the statement also sets
    ``synchronous_commit=off`` for its transaction, saving a separate ``SET LOCAL``."""
    marks = ", ".join("?" * count)
    if relax:
        return (
            "WITH relax AS (SELECT set_config('synchronous_commit', 'off', true))"
            f" {head} SELECT {marks} FROM relax {tail}"
        )
    return f"{head} VALUES ({marks}) {tail}"


def insert_sql(dialect: str, durable: bool, head: str, count: int, tail: str) -> str:
    """An insert of ``count`` parameters; not ``durable`` relaxes the commit on PostgreSQL."""
    return _insert_sql(head, count, tail, not durable and dialect == "postgresql")


def _text_param(dialect: str) -> str:
    """A text parameter compared with stored keys inside a recursive query: PostgreSQL must be
    told its type and the byte-order collation of the keys."""
    return 'CAST(? AS TEXT) COLLATE "C"' if dialect == "postgresql" else "?"


def fetch_blobs_sql(dialect: str, count: int) -> str:
    """The blob rows of ``count`` (thread_id, ns, channel, version) keys and every delta base
    they rest on, in one statement."""
    mark = f"({', '.join([_text_param(dialect)] * 4)})"
    return (
        "WITH RECURSIVE need(thread_id, ns, channel, version) AS ("
        f" VALUES {', '.join(mark for _ in range(count))}"
        " UNION SELECT b.thread_id, b.ns, b.channel, b.base FROM lg_blobs b JOIN need n"
        " ON b.thread_id = n.thread_id AND b.ns = n.ns AND b.channel = n.channel"
        " AND b.version = n.version WHERE b.base IS NOT NULL)"
        f" SELECT {_BLOB_COLS} FROM lg_blobs b JOIN need n"
        " ON b.thread_id = n.thread_id AND b.ns = n.ns AND b.channel = n.channel"
        " AND b.version = n.version"
    )


def ancestors_sql(dialect: str) -> str:
    """Up to ``?`` checkpoints up the parent chain from a checkpoint id, nearest first.
    Parameters: the first id, thread_id, ns, the depth, thread_id, ns."""
    return (
        "WITH RECURSIVE chain(checkpoint_id, lvl) AS ("
        f" SELECT {_text_param(dialect)}, 0"
        " UNION ALL SELECT c.parent_id, chain.lvl + 1 FROM lg_checkpoints c"
        " JOIN chain ON c.thread_id = ? AND c.ns = ? AND c.checkpoint_id = chain.checkpoint_id"
        " WHERE c.parent_id IS NOT NULL AND chain.lvl < ?)"
        " SELECT c.checkpoint_id, c.parent_id, c.ctype, c.checkpoint, chain.lvl"
        " FROM chain JOIN lg_checkpoints c ON c.thread_id = ? AND c.ns = ?"
        " AND c.checkpoint_id = chain.checkpoint_id ORDER BY chain.lvl"
    )


def filter_conditions(filter: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """A condition that narrows a metadata filter in SQL to a superset of the matches (the
    exact test is ``_metadata_matches``, in Python), the same on SQLite and PostgreSQL and
    unable to fail on any stored text: it never parses stored metadata (PostgreSQL's
    ``jsonb`` refuses a NUL or a lone surrogate, which would fail the query for every
    thread). A row matches when its JSON text holds ``"key": value`` for each string value and
    ``"key": `` for each number or boolean (``1`` equals ``1.0`` and ``True``), or when it
    holds a ``\\u`` escape (then a value may be written otherwise). ``None``, objects and
    arrays, and terms that cannot be sent (a lone surrogate), narrow nothing."""
    terms: list[str] = []
    for key, value in filter.items():
        if not isinstance(key, str):
            raise TypeError(f"filter: metadata keys must be strings, got {key!r}")
        if isinstance(value, str):
            text = f"{_dump_metadata(key)}: {_dump_metadata(value)}"
        elif isinstance(value, (int, float)):
            text = f"{_dump_metadata(key)}: "
        else:
            continue
        try:
            text.encode()
        except UnicodeEncodeError:
            continue
        terms.append("%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
    if not terms:
        return [], []
    like = "metadata LIKE ? ESCAPE '\\'"
    either = f"({like} OR ({' AND '.join(like for _ in terms)}))"
    return [either], ["%\\\\u%", *terms]
