"""What this package registers for the ``convostore`` command: its component (the tables
``convostore migrate`` copies, entry-point group ``convostore.components``), the retention of
``convostore prune`` for LangGraph threads, and ``convostore import-from langgraph``
(``convostore.importers``)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from convostore import (
    MANAGED_BY_KEY,
    ConflictError,
    ConversationMeta,
    ConversationStore,
    ConvostoreError,
    MemoryValidationError,
    StorageError,
)
from convostore.spi import Component, PruneRequest, Table, Tx, check_optional_id

from ._schema import COMPONENT as NAME
from ._schema import (
    STEPS,
    THREAD_KEY,
    checkpoints_newest_first,
    delete_thread,
    holds_sqlite_saver_tables,
    saver_checkpoint_keys,
    thread_heads,
)

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

ALLOWED_TYPES = (
    "LangChain messages, LangGraph's own types, the standard library's plain ones"
    " (LangGraph's strict msgpack list)"
)
_SERDE_LOGGER = "langgraph.checkpoint.serde.jsonplus"
_STAGING = "convostore-import/"
"""Prefix of the thread a thread is staged in before it is copied whole (one transaction)."""


class _Refused(Exception):
    """A stored value ``import-from`` does not load; the message says why."""


class ForeignSerializer:
    """How ``import-from langgraph`` reads values someone else stored: LangGraph's own
    ``JsonPlusSerializer`` in its strict msgpack mode (``allowed_msgpack_modules=None``:
    only ``ALLOWED_TYPES`` are constructed), where a type off that list is an error naming it
    instead of its raw data; pickle and unknown formats are never loaded, and the old JSON
    format revives LangChain messages only (``allowed_objects="messages"``)."""

    def __init__(self) -> None:
        from langchain_core.load.load import Reviver
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self._strict = JsonPlusSerializer(allowed_msgpack_modules=None)
        self._reviver = Reviver(allowed_objects="messages")

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self._strict.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, raw = data
        if type_ in ("null", "bytes", "bytearray"):
            return self._strict.loads_typed(data)
        if raw is None:
            raise _Refused("its stored value is NULL")
        if not isinstance(raw, bytes | str):
            raise _Refused(f"its stored value is {type(raw).__name__}, not bytes")
        if type_ == "msgpack":
            return self._msgpack(raw)
        if type_ == "json":
            return self._json(raw)
        raise _Refused(
            f"it is stored as {type_!r}, a format import-from never loads"
            " (only msgpack, json, bytes and null)"
        )

    def _msgpack(self, raw: bytes | str) -> Any:
        from langgraph.checkpoint.serde.event_hooks import (
            SerdeEvent,
            register_serde_event_listener,
        )

        blocked: list[str] = []
        me = threading.get_ident()

        def listen(event: SerdeEvent) -> None:
            if threading.get_ident() == me and event["kind"].endswith("_blocked"):
                parts = [event["module"], event["name"]]
                blocked.append(".".join([*parts, event["method"]] if "method" in event else parts))

        unregister = register_serde_event_listener(listen)
        try:
            value = self._strict.loads_typed(("msgpack", raw))  # type: ignore[arg-type]
        except Exception as exc:  # ormsgpack's decode errors, nesting too deep
            raise _Refused(f"its msgpack cannot be read ({_cause(exc)})") from None
        finally:
            unregister()
        if blocked:
            raise _Refused(
                f"it names {blocked[0]!r}, which is off the allow-list ({ALLOWED_TYPES})"
            )
        return value

    def _json(self, raw: bytes | str) -> Any:
        def revive(value: dict[str, Any]) -> Any:
            if value.get("type") == "constructor" and value.get("lc") in (1, 2):
                name = ".".join(map(str, value.get("id") or []))
                if value["lc"] == 2:  # LangGraph's own envelope: not a LangChain message
                    raise _Refused(f"it names {name!r}, which is not a LangChain message")
                try:
                    return self._reviver(value)
                except Exception:
                    raise _Refused(f"it names {name!r}, which is not a LangChain message") from None
            return value

        try:
            return json.loads(raw, object_hook=revive)
        except _Refused:
            raise
        except Exception as exc:  # not JSON, not UTF-8, nested too deep
            raise _Refused(f"its JSON cannot be read ({_cause(exc)})") from None


def _cause(exc: BaseException) -> str:
    """An exception's first line, for a one-line error."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _shown(source: str) -> str:
    """``source`` as an error names it: quoted (escaped), a URL's password left out."""
    return repr(re.sub(r"^(\w+://[^:/@]*):[^@/]*@", r"\1:***@", source))


class _Quiet(logging.Filter):
    """Drops LangGraph's warnings about refused types from this thread: the error says it."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


class _Source(NamedTuple):
    """An open source: LangGraph's saver on it, its checkpoints' keys, the errors that
    mean its database failed (not its data)."""

    saver: Any
    keys: list[tuple[Any, ...]]
    failures: tuple[type[Exception], ...]


@contextlib.contextmanager
def _source(source: str) -> Iterator[_Source]:
    """LangGraph's own saver on ``source``, reading through ``ForeignSerializer`` only, and
    the keys of every checkpoint it holds: a ``SqliteSaver`` file (a path or
    ``sqlite:///path``, opened read-only) or a ``PostgresSaver`` URL."""
    serde = ForeignSerializer()
    name = _shown(source)
    if source.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row, tuple_row
        except ImportError:
            raise ImportError(
                "import-from langgraph on PostgreSQL needs LangGraph's PostgresSaver:"
                " pip install langgraph-checkpoint-postgres"
            ) from None
        try:
            conn = psycopg.Connection.connect(
                source, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
        except psycopg.Error as exc:
            raise StorageError(f"source {name}: cannot connect ({_cause(exc)})") from None
        with conn:
            try:
                keys = saver_checkpoint_keys(conn.cursor(row_factory=tuple_row))
            except psycopg.Error as exc:
                raise MemoryValidationError(
                    f"source {name} is not a LangGraph PostgresSaver database ({_cause(exc)})",
                    argument="source",
                ) from None
            failures = (psycopg.OperationalError, psycopg.InterfaceError)
            yield _Source(PostgresSaver(conn, serde=serde), keys, failures)
        return
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
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn3 = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        try:
            if not holds_sqlite_saver_tables(conn3):
                raise MemoryValidationError(
                    f"source {source!r} is not a LangGraph SqliteSaver database"
                    " (no checkpoints table)",
                    argument="source",
                )
            keys = saver_checkpoint_keys(conn3.cursor())
            theirs = SqliteSaver(conn3, serde=serde)
            theirs.setup()  # creates nothing on a read-only file: it checks the tables are there
        except sqlite3.Error as exc:
            raise MemoryValidationError(
                f"source {source!r} is not a LangGraph SqliteSaver database ({_cause(exc)})",
                argument="source",
            ) from None
        yield _Source(theirs, keys, ())
    finally:
        conn3.close()


def _threads(name: str, keys: list[tuple[Any, ...]]) -> dict[str, list[tuple[str, str]]]:
    """The source's threads, each with its (namespace, checkpoint id) oldest first."""
    threads: dict[str, list[tuple[str, str]]] = {}
    for key in keys:
        if not all(isinstance(part, str) for part in key):
            raise MemoryValidationError(
                f"source {name}: a checkpoint's key {key!r} is not text", argument="source"
            )
        tid, ns, cid = key
        threads.setdefault(tid, []).append((ns, cid))
    for checkpoints in threads.values():
        checkpoints.sort(key=lambda k: k[1])  # ids are time-ordered (UUIDv6)
    return dict(sorted(threads.items()))


def _read(source: _Source, where: str, config: Any) -> Any:
    """One checkpoint of the source as a ``CheckpointTuple`` whose parts have the shapes
    ``put`` takes; anything else is a ``MemoryValidationError`` saying ``where``."""
    from langgraph.checkpoint.base import CheckpointTuple

    try:
        found = source.saver.get_tuple(config)
    except _Refused as exc:
        raise MemoryValidationError(f"{where}: {exc}", argument="source") from None
    except Exception as exc:  # the source is someone else's: whatever breaks is its data's
        if isinstance(exc, source.failures):
            raise StorageError(f"{where} cannot be read: {_cause(exc)}") from exc
        raise MemoryValidationError(
            f"{where} cannot be read: {_cause(exc)}", argument="source"
        ) from None
    problem = None
    if not isinstance(found, CheckpointTuple):
        problem = "it vanished while being read"
    elif not isinstance(found.checkpoint, dict):
        problem = f"its checkpoint is {type(found.checkpoint).__name__}, not a map"
    elif not all(isinstance(found.checkpoint.get(k), dict) for k in _SHAPE):
        problem = f"its checkpoint lacks {', '.join(_SHAPE)}"
    elif found.checkpoint.get("id") != config["configurable"]["checkpoint_id"]:
        problem = f"its checkpoint names another id ({found.checkpoint.get('id')!r})"
    elif not isinstance(found.metadata, dict):
        problem = f"its metadata is {type(found.metadata).__name__}, not a map"
    elif not all(isinstance(w, tuple) and len(w) == 3 for w in found.pending_writes or []):
        problem = "a pending write is not (task_id, channel, value)"
    if problem is not None:
        raise MemoryValidationError(f"{where}: {problem}", argument="source")
    return found


_SHAPE = ("channel_values", "channel_versions")


def import_langgraph(
    store: ConversationStore,
    source: str,
    *,
    user_id: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, int]]:
    """Copy the checkpoints of a LangGraph ``SqliteSaver`` or ``PostgresSaver`` database that
    this store lacks into its checkpointer: each (oldest first, with its parent, metadata and
    changed channels) and its pending writes, through the saver's own ``put`` and
    ``put_writes``, so a graph resumes here exactly where it stood there.

    Values are read with ``ForeignSerializer`` (an allow-list: nothing else the file names is
    constructed). A thread is written whole or not at all: staged under a thread of its own,
    then copied in one transaction. Checkpoints already here are kept as they are, so running
    it again writes only what is new, and says so. ``user_id`` owns the threads'
    conversations (given as ``configurable["user_id"]``, as a graph run would); a thread whose
    metadata names another owner, or whose conversation here another user owns, is refused."""
    run = _Import(store, source, check_optional_id("user_id", user_id, store.limits))
    quiet = _Quiet()
    logging.getLogger(_SERDE_LOGGER).addFilter(quiet)
    try:
        with _source(source) as theirs:
            keys = theirs.keys
            threads = _threads(run.name, keys)
            seen = 0
            for n, (tid, checkpoints) in enumerate(threads.items()):
                run.thread(theirs, tid, checkpoints)
                seen += len(checkpoints)
                if progress is not None:
                    progress("LangGraph threads", n + 1, len(threads))
                    progress("checkpoints", seen, len(keys))
    except ConvostoreError as exc:
        if run.threads:
            exc.add_note(
                f"imported before it, whole: {run.threads:,} LangGraph threads"
                f" ({run.checkpoints:,} checkpoints)"
            )
        raise
    finally:
        logging.getLogger(_SERDE_LOGGER).removeFilter(quiet)
    return [
        ("LangGraph threads", run.threads),
        ("checkpoints", run.checkpoints),
        ("pending writes", run.writes),
    ]


class _Import:
    """One ``import_langgraph`` run: where it writes, and what it wrote."""

    def __init__(self, store: ConversationStore, source: str, user_id: str | None) -> None:
        from .saver import ConvostoreSaver

        self.store = store
        self.saver: Any = store.langgraph_checkpointer
        # staged threads get no conversation: the thread's comes after the copy
        self.staging = ConvostoreSaver(store, messages_key=None)
        self.name = _shown(source)
        self.user_id = user_id
        projection = self.saver.projection
        self.owner_key: str = "user_id" if projection is None else projection.owner_key
        self.threads = self.checkpoints = self.writes = 0

    def thread(self, theirs: _Source, tid: str, checkpoints: list[tuple[str, str]]) -> None:
        """Stage what thread ``tid`` lacks here (checkpoints, and pending writes the source
        added to checkpoints already here), then copy it to ``tid`` in one transaction."""
        projection = self.saver.projection
        if self.user_id is not None and projection is not None:  # another user's: refused
            self.store.get_conversation(
                conversation_id=projection.conversation_id(tid), user_id=self.user_id
            )
        held = self.store.backend.read(functools.partial(checkpoints_newest_first, thread_id=tid))
        stage = _Stage(self.staging, _STAGING + hashlib.sha256(tid.encode()).hexdigest()[:40])
        try:
            versions: dict[tuple[str, str], dict[str, Any]] = {}
            new = writes = 0
            for ns, cid in checkpoints:
                where = f"source {self.name}: thread {tid!r}, checkpoint {cid!r}"
                if ns:
                    where += f" (namespace {ns!r})"
                conf = {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": cid}
                t = _read(theirs, where, {"configurable": conf})
                try:
                    if (ns, cid) in {(n, c) for n, c, _ in held}:
                        writes += self._writes(stage, t, ours=self.saver.get_tuple(t.config))
                    else:
                        saved = self._put(stage, where, t, versions)
                        writes += self._writes(stage, t, saved=saved)
                        new += 1
                except MemoryValidationError as exc:
                    raise MemoryValidationError(f"{where}: {exc}", argument="source") from None
                versions[(ns, cid)] = dict(t.checkpoint["channel_versions"])
            if stage.used:
                self.saver.copy_thread(stage.thread_id, tid)
        finally:
            stage.drop()
        if stage.used:
            self.threads += 1
            self.checkpoints += new
            self.writes += writes

    def _put(
        self, stage: _Stage, where: str, t: Any, versions: dict[tuple[str, str], dict[str, Any]]
    ) -> Any:
        """Stage the checkpoint ``t`` (its channels new since its parent); its config."""
        owner = t.metadata.get(self.owner_key)
        if self.user_id is not None and isinstance(owner, str) and owner != self.user_id:
            raise ConflictError(
                f"{where}: its metadata names {owner!r} as the owner, not --user {self.user_id!r}"
            )
        conf = t.config["configurable"]
        parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        current = t.checkpoint["channel_versions"]
        before = versions.get((conf["checkpoint_ns"], parent), {})  # a parent not read: all new
        config: dict[str, Any] = {
            "thread_id": stage.start(),
            "checkpoint_ns": conf["checkpoint_ns"],
        }
        if parent is not None:
            config["checkpoint_id"] = parent
        if self.user_id is not None:
            config[self.owner_key] = self.user_id
        new = {k: v for k, v in current.items() if before.get(k) != v}
        return self.staging.put({"configurable": config}, t.checkpoint, t.metadata, new)

    def _writes(self, stage: _Stage, t: Any, *, saved: Any = None, ours: Any = None) -> int:
        """Stage the pending writes of ``t`` that its copy here (``ours``) lacks; how many."""
        have = (
            {(task, channel) for task, channel, _ in (ours.pending_writes or [])} if ours else set()
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in t.pending_writes or []:
            if (task_id, channel) not in have:
                by_task.setdefault(task_id, []).append((channel, value))
        if not by_task:
            return 0
        if saved is None:
            conf = t.config["configurable"]
            saved = {"configurable": {**conf, "thread_id": stage.start()}}
        for task_id, items in by_task.items():
            self.staging.put_writes(saved, items, task_id)
        return sum(len(items) for items in by_task.values())


class _Stage:
    """The thread one source thread is staged in, emptied before its first use (what an
    interrupted run left) and after."""

    def __init__(self, staging: Any, thread_id: str) -> None:
        self.staging = staging
        self.thread_id = thread_id
        self.used = False

    def start(self) -> str:
        if not self.used:
            self.staging.delete_thread(self.thread_id)
            self.used = True
        return self.thread_id

    def drop(self) -> None:
        if self.used:
            self.staging.delete_thread(self.thread_id)
