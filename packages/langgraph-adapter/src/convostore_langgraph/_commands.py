"""What this package registers for the ``convostore`` command: its component (the tables
``convostore migrate`` copies, entry-point group ``convostore.components``), the retention of
``convostore prune`` for LangGraph threads, and ``convostore import-from langgraph``
(``convostore.importers``)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

from convostore import MANAGED_BY_KEY, ConversationMeta, ConversationStore
from convostore.spi import Component, PruneRequest, Table, Tx

from ._projection import THREAD_KEY
from ._schema import COMPONENT as NAME
from ._schema import STEPS, delete_thread, holds_sqlite_saver_tables, thread_heads

_UUID_EPOCH = 0x01B21DD213814000  # 1582-10-15 to 1970-01-01 in 100 ns ticks


def _checkpoint_ms(checkpoint_id: str) -> int | None:
    """When a checkpoint was taken, from its UUIDv6 id (None if it is not one)."""
    try:
        value = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if value.version != 6:
        return None
    n = value.int
    ticks = ((n >> 96) << 28) | (((n >> 80) & 0xFFFF) << 12) | ((n >> 64) & 0x0FFF)
    return (ticks - _UUID_EPOCH) // 10_000


def prune(store: ConversationStore, request: PruneRequest) -> list[tuple[str, int]]:
    """Threads whose newest checkpoint is older than ``older_than_ms`` are deleted; with
    ``keep_last``, every other thread is cut to its latest checkpoint (the saver's
    ``prune(keep_latest)``; a checkpoint holds the whole state, so N does not apply). Threads
    have no owner: with ``user_id`` they are left alone."""
    if request.user_id is not None:
        return []
    heads = store.backend.read(thread_heads)
    now = store.clock()
    old: list[str] = []
    if request.older_than_ms is not None:
        cutoff = now - request.older_than_ms
        for tid, head in heads:
            at = _checkpoint_ms(head)
            if at is not None and at < cutoff:
                old.append(tid)
    report: list[tuple[str, int]] = []
    saver: Any = store.langgraph_checkpointer
    if request.older_than_ms is not None:
        if not request.dry_run:
            saver.prune(old, strategy="delete")
        report.append(("LangGraph threads", len(old)))
    if request.keep_last is not None:
        rest = [tid for tid, _ in heads if tid not in set(old)]
        cut = 0
        for tid in rest:
            if request.dry_run:
                cut += 1
                continue
            try:
                saver.prune([tid], strategy="keep_latest")
                cut += 1
            except NotImplementedError:  # a DeltaChannel thread: its history is its state
                pass
        report.append(("LangGraph threads cut to their latest checkpoint", cut))
    return report


def on_delete(tx: Tx, conversations: list[ConversationMeta]) -> None:
    """A thread's conversation deleted through the core (``delete_conversation``,
    ``delete_user_data``...) takes the thread with it, in the same transaction."""
    for meta in conversations:
        managed = (meta.metadata or {}).get(MANAGED_BY_KEY) or {}
        thread_id = managed.get(THREAD_KEY)
        if isinstance(thread_id, str):
            delete_thread(tx, thread_id)


COMPONENT = Component(
    name=NAME,
    steps=STEPS,
    tables=(
        Table("lg_checkpoints", ("thread_id", "ns", "checkpoint_id"), "LangGraph checkpoints"),
        Table("lg_blobs", ("thread_id", "ns", "channel", "version"), "LangGraph channel values"),
        Table(
            "lg_writes",
            ("thread_id", "ns", "checkpoint_id", "task_id", "idx"),
            "LangGraph pending writes",
        ),
        Table("lg_store", ("prefix", "key"), "LangGraph store items"),
    ),
    prune=prune,
    on_delete=on_delete,
    package="convostore-langgraph",
)


# -- convostore import-from langgraph --------------------------------------------------------


def _open_source(source: str) -> Any:
    """A context manager giving LangGraph's own saver on ``source``: a ``SqliteSaver`` file
    (a path or ``sqlite:///path``) or a ``PostgresSaver`` URL. Its tables are only read."""
    from convostore import MemoryValidationError

    if source.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:
            raise ImportError(
                "import-from langgraph on PostgreSQL needs LangGraph's PostgresSaver:"
                " pip install langgraph-checkpoint-postgres"
            ) from None
        return PostgresSaver.from_conn_string(source)
    path = source[len("sqlite:///") :] if source.startswith("sqlite:///") else source
    if not os.path.isfile(path):
        raise MemoryValidationError(f"source {source!r}: there is no file {path!r}")
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise ImportError(
            "import-from langgraph on SQLite needs LangGraph's SqliteSaver:"
            " pip install langgraph-checkpoint-sqlite"
        ) from None
    conn = sqlite3.connect(path, check_same_thread=False)
    if not holds_sqlite_saver_tables(conn):
        conn.close()
        raise MemoryValidationError(
            f"source {source!r} is not a LangGraph SqliteSaver database (no checkpoints table)"
        )
    return _closing_saver(SqliteSaver(conn), conn)


@contextlib.contextmanager
def _closing_saver(saver: Any, conn: sqlite3.Connection) -> Iterator[Any]:
    try:
        yield saver
    finally:
        conn.close()


def import_langgraph(store: ConversationStore, source: str) -> list[tuple[str, int]]:
    """Copy every thread of a LangGraph ``SqliteSaver`` or ``PostgresSaver`` database into
    this store's checkpointer: each checkpoint (oldest first, with its parent, metadata and
    changed channels) and its pending writes, through the saver's own ``put`` and
    ``put_writes``, so a graph resumes here exactly where it stood there. Threads already
    present are copied again idempotently (same ids)."""
    saver: Any = store.langgraph_checkpointer
    threads = checkpoints = writes = 0
    with _open_source(source) as theirs:
        tids = sorted({t.config["configurable"]["thread_id"] for t in theirs.list(None)})
        for tid in tids:
            threads += 1
            history = list(theirs.list({"configurable": {"thread_id": tid}}))
            history.sort(key=lambda t: t.checkpoint["id"])  # ids are time-ordered
            versions: dict[tuple[str, str | None], dict[str, Any]] = {}
            for t in history:
                conf = t.config["configurable"]
                ns = conf.get("checkpoint_ns", "")
                parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
                before = versions.get((ns, parent), {})
                current = t.checkpoint["channel_versions"]
                new = {k: v for k, v in current.items() if before.get(k) != v}
                config = {"configurable": {"thread_id": tid, "checkpoint_ns": ns}}
                if parent is not None:
                    config["configurable"]["checkpoint_id"] = parent
                saved = saver.put(config, t.checkpoint, t.metadata, new)
                versions[(ns, t.checkpoint["id"])] = dict(current)
                checkpoints += 1
                by_task: dict[str, list[tuple[str, Any]]] = {}
                for task_id, channel, value in t.pending_writes or []:
                    by_task.setdefault(task_id, []).append((channel, value))
                for task_id, items in by_task.items():
                    saver.put_writes(saved, items, task_id)
                    writes += len(items)
    return [
        ("LangGraph threads", threads),
        ("checkpoints", checkpoints),
        ("pending writes", writes),
    ]
