"""The embedded default: one SQLite file (or a private in-memory database), stdlib sqlite3."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]

from .. import telemetry
from ..errors import ClosedError, MemoryValidationError, StorageError
from .base import Backend, T, Tx, WouldBlock
from .schema import MIGRATIONS
from .search import FTS_TABLES, MARK_FROM_SCAN, MERGE_SEGMENTS, SqliteSearch

_log = logging.getLogger("convostore")
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


# Messages and memory entries this connection wrote without their index rows (or left them
# stale), indexed in one transaction once there are this many (and when the store closes); a
# search reads them directly meanwhile.
INDEX_BATCH = 256


class SqliteTx(SqliteSearch, Tx):
    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        single_statement: bool = False,
        backend: SqliteBackend | None = None,
    ) -> None:
        self.conn = conn
        self.single_statement = single_statement
        self.backend = backend

    def _left_unindexed(self, count: int) -> None:
        if self.backend is not None:
            self.backend.unindexed += count

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._counted()
        return self.conn.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, self._counted_rows(rows))

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        self._counted()
        cursor = self.conn.execute(sql, params)  # SQLite steps it one row at a time
        try:
            yield from cursor
        finally:
            cursor.close()


class SqliteBackend(Backend):
    """WAL, ``synchronous=NORMAL`` unless asked for ``FULL``, ``BEGIN IMMEDIATE`` writes.

    One connection per store, used by one thread at a time; several processes share the file,
    serialized by SQLite's write lock, and a busy database is waited for, never reported.
    """

    dialect = "sqlite"
    inline = True

    def __init__(self, path: str, *, synchronous: str = "NORMAL", timeout: float = 60.0) -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise MemoryValidationError(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}"
            )
        self.path = path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._no_wait = threading.local()
        self._commits = 0  # this connection's writes (its data_version does not see them)
        self.unindexed = 0  # messages and entries it left to the index's batch (INDEX_BATCH)
        self._seen = (0, 0)
        self._queue: int | None = None
        if path != ":memory:" and fcntl is not None:
            self._queue = os.open(f"{path}-writers", os.O_RDWR | os.O_CREAT, 0o644)
        self._conn: sqlite3.Connection | None = self._retry(
            lambda: self._connect(synchronous.upper())
        )
        self.migrate("core", MIGRATIONS)
        # What wait_for_change compares with: the database as this store opened it, so no
        # commit made after the open (by anyone) goes unnoticed by a first wait.
        self._seen = self._version()

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        # No busy handler: a busy database is reported at once, and ``_retry`` waits for it
        # (or, on the event loop, the call moves to a thread instead of waiting).
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
        try:
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            # Deleted rows are overwritten with zeros, not left in free pages of the file
            # (SQLite's upstream build leaves this off).
            conn.execute("PRAGMA secure_delete=ON")
        except BaseException:
            conn.close()
            raise
        return conn

    def _retry(self, fn: Callable[[], T], *, no_wait: bool = False) -> T:
        """Run ``fn``, retrying while SQLite reports the database busy, up to ``timeout``
        (with ``no_wait``, a busy database raises ``WouldBlock`` instead)."""
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        retries = 0
        try:
            while True:
                try:
                    return fn()
                except sqlite3.OperationalError as exc:
                    busy = exc.sqlite_errorcode & 0xFF in _BUSY
                    if busy and no_wait:
                        raise WouldBlock from None  # rolled back: nothing was written
                    if not busy or time.monotonic() > deadline:
                        raise StorageError(f"SQLite error on {self.path}: {exc}") from exc
                except sqlite3.Error as exc:
                    raise StorageError(f"SQLite error on {self.path}: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.1)
                retries += 1
        finally:
            counts = telemetry.counting()  # a traced call's: its retries
            if counts is not None:
                counts.add(retries=retries)

    def _transaction(
        self, begin: str | None, fn: Callable[[Tx], T], *, single: bool, queue: bool = False
    ) -> T:
        """``fn`` in a transaction opened with ``begin``; with None (a read of one statement)
        in SQLite's own: autocommit reads one statement from one snapshot."""

        def attempt() -> T:
            conn = self._conn
            if conn is None:
                raise ClosedError("the store is closed")
            if begin is None:
                return fn(SqliteTx(conn, single_statement=True))
            conn.execute(begin)
            try:
                result = fn(SqliteTx(conn, single_statement=single, backend=self))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

        # Under ``without_waiting`` every lock is tried once, until the call's first write: a
        # call that gave up is run again on a thread, which may repeat reads but never a write.
        no_wait = getattr(self._no_wait, "armed", False)
        measured = telemetry.instruments() if queue else None
        started = time.perf_counter() if measured is not None else 0.0
        if queue:
            self._no_wait.armed = False
        if not self._lock.acquire(blocking=not no_wait):
            raise WouldBlock
        try:
            if queue and self._queue is not None:
                # SQLite's busy waits poll with sleeps, so contending writers idle; a blocking
                # flock queues this file's writers across processes and wakes the next at once.
                try:
                    fcntl.flock(self._queue, fcntl.LOCK_EX | (fcntl.LOCK_NB if no_wait else 0))
                except BlockingIOError:
                    raise WouldBlock from None
                if measured is not None:  # the turn among this file's writers, come
                    measured.queue_wait.record(time.perf_counter() - started)
                try:
                    return self._retry(attempt, no_wait=no_wait)
                finally:
                    fcntl.flock(self._queue, fcntl.LOCK_UN)
            return self._retry(attempt, no_wait=no_wait)
        finally:
            self._lock.release()

    def without_waiting(self, call: Callable[[], T]) -> T:
        self._no_wait.armed = True
        try:
            return call()
        finally:
            self._no_wait.armed = False

    # single_statement only checks the promise here: BEGIN and COMMIT cost no round trip
    def write(
        self, fn: Callable[[Tx], T], *, single_statement: bool = False, erasing: bool = False
    ) -> T:
        result = self._transaction("BEGIN IMMEDIATE", fn, single=single_statement, queue=True)
        self._commits += 1
        if erasing:
            self.truncate_wal()
        if self.unindexed >= INDEX_BATCH:
            self.index_pending()
        return result

    def index_pending(self) -> None:
        """Index the messages written without their index rows, in one transaction. The
        writes that left them are committed: a failure here is logged, never raised (they
        stay readable by a search, and the next batch or ``reindex`` takes them)."""
        self.unindexed = 0
        try:
            self._transaction(
                "BEGIN IMMEDIATE",
                lambda tx: tx.index_unindexed(4 * INDEX_BATCH),
                single=False,
                queue=True,
            )
            self._commits += 1
        except (StorageError, WouldBlock, ClosedError) as exc:
            _log.warning("search index: a batch was left for later (%s)", exc)

    def truncate_wal(self) -> bool:
        """Copy the write-ahead log into the file and empty it, so that the old versions of
        deleted rows it holds are gone; False when a reader still uses it (it is then left
        for SQLite's next checkpoint). Never waits."""
        if not self._lock.acquire(blocking=not getattr(self._no_wait, "armed", False)):
            return False
        try:
            conn = self._conn
            if conn is None or self.path == ":memory:":
                return True
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _BUSY:
                return False
            raise StorageError(f"SQLite error on {self.path}: {exc}") from exc
        finally:
            self._lock.release()
        return not busy

    def _version(self) -> tuple[int, int]:
        """What changes when anyone commits: ``PRAGMA data_version`` (other connections'
        commits) and this connection's own count."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise ClosedError("the store is closed")
            try:
                (version,) = conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error as exc:
                raise StorageError(f"SQLite error on {self.path}: {exc}") from exc
            return int(version), self._commits

    def wait_for_change(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        seen = self._seen
        while True:
            now = self._version()
            if now != seen:
                self._seen = now
                return True
            self._seen = now
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(0.05, left))

    def vacuum(self, tables: Sequence[str]) -> None:
        """Merge the search index's segments (the postings of deleted text go), then rebuild
        the whole file."""

        def run() -> None:
            conn = self._conn
            if conn is None:
                raise ClosedError("the store is closed")
            for table in FTS_TABLES:
                conn.execute(MERGE_SEGMENTS.format(table))
            conn.execute("VACUUM")
            conn.execute(MARK_FROM_SCAN)  # VACUUM may number the messages' rows anew

        with self._lock:
            self._retry(run)
        self.truncate_wal()

    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        return self._transaction(None if single_statement else "BEGIN", fn, single=single_statement)

    @property
    def closed(self) -> bool:
        return self._conn is None

    def close(self) -> None:
        if self.unindexed and self._conn is not None:
            self.index_pending()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._queue is not None:
                os.close(self._queue)
                self._queue = None
