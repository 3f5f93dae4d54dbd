"""The adapter's tables. All SQL of the package lives in this module and in the two classes'
row helpers; it runs through the core backend (``?`` placeholders on SQLite and PostgreSQL)."""

from __future__ import annotations

from convostore.backends import Backend

COMPONENT = "convostore-langgraph"

_STEPS: list[list[str]] = [
    [
        # One row per checkpoint, without its channel values (those live in lg_blobs).
        """CREATE TABLE lg_checkpoints (
            thread_id TEXT {c} NOT NULL,
            ns TEXT {c} NOT NULL,
            checkpoint_id TEXT {c} NOT NULL,
            parent_id TEXT {c},
            ctype TEXT NOT NULL,
            checkpoint {blob} NOT NULL,
            metadata TEXT NOT NULL,
            run_id TEXT {c},
            PRIMARY KEY (thread_id, ns, checkpoint_id)
        )""",
        "CREATE INDEX lg_checkpoints_by_run ON lg_checkpoints (run_id)",
        "CREATE INDEX lg_checkpoints_by_id ON lg_checkpoints (checkpoint_id)",
        # One row per (channel, version): unchanged channels are never rewritten. A row with a
        # base is a delta of a list: the base's first ``keep`` items, then this row's items.
        """CREATE TABLE lg_blobs (
            thread_id TEXT {c} NOT NULL,
            ns TEXT {c} NOT NULL,
            channel TEXT {c} NOT NULL,
            version TEXT {c} NOT NULL,
            type TEXT NOT NULL,
            data {blob},
            base TEXT {c},
            keep INTEGER,
            depth INTEGER NOT NULL DEFAULT 0,
            tail BIGINT NOT NULL DEFAULT 0,
            snap BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (thread_id, ns, channel, version)
        )""",
        # Pending writes. No foreign key: a superstep's writes may commit before its checkpoint.
        """CREATE TABLE lg_writes (
            thread_id TEXT {c} NOT NULL,
            ns TEXT {c} NOT NULL,
            checkpoint_id TEXT {c} NOT NULL,
            task_id TEXT {c} NOT NULL,
            idx INTEGER NOT NULL,
            task_path TEXT {c} NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            type TEXT,
            data {blob},
            PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
        )""",
        # The BaseStore. ``prefix`` is the namespace joined with "." (labels cannot hold one).
        """CREATE TABLE lg_store (
            prefix TEXT {c} NOT NULL,
            key TEXT {c} NOT NULL,
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
]


def migrate(backend: Backend) -> None:
    """Create or upgrade the adapter's tables on ``backend`` (idempotent, transactional)."""
    if backend.dialect == "postgresql":
        fmt = {"c": 'COLLATE "C"', "blob": "BYTEA"}
    else:
        fmt = {"c": "", "blob": "BLOB"}
    backend.migrate(COMPONENT, [[s.format(**fmt) for s in step] for step in _STEPS])
