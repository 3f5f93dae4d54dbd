"""The adapter's tables. All SQL of the package lives in this module and in the two classes'
row helpers; it runs through the core backend (``?`` placeholders on SQLite and PostgreSQL)."""

from __future__ import annotations

from convostore.spi import SQLITE_ONLY, Backend

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
