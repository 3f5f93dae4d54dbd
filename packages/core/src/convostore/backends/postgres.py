"""PostgreSQL through psycopg 3 and a connection pool (yours or one made from the URL)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import random
import select
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..errors import ConvostoreError, MemoryValidationError, StorageError
from .base import MIGRATIONS, Backend, T, Tx

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "PostgreSQL support needs psycopg: pip install 'convostore[postgres]'"
    ) from exc

_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
_READ_LEVEL = psycopg.IsolationLevel.REPEATABLE_READ
CONNECT_TIMEOUT = 5
"""Seconds to wait for a connection unless the URL says ``?connect_timeout=N``."""


class PostgresTx(Tx):
    lock_suffix = " FOR UPDATE"

    def __init__(self, conn: psycopg.Connection[Any], *, single_statement: bool = False) -> None:
        self.conn = conn
        self.single_statement = single_statement

    @staticmethod
    @functools.lru_cache(maxsize=512)
    def _sql(sql: str) -> bytes:
        return sql.replace("%", "%%").replace("?", "%s").encode()

    def lock_schema(self, component: str) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", [zlib.crc32(component.encode())])

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._counted()
        cur = self.conn.execute(self._sql(sql), params)
        return cur.fetchall() if cur.description is not None else []

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = self._counted_rows(rows)
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), rows)

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """A server-side cursor fetched in chunks of about ``STREAM_BYTES``: the chunk's row
        count follows the rows' size (a few rows when they are megabytes each)."""
        self._counted()
        with self.conn.cursor(name=f"convostore_stream_{next(_CURSORS)}") as cur:
            cur.execute(self._sql(sql), params)
            size = 64
            while rows := cur.fetchmany(size):
                yield from rows
                sample = rows[:: max(1, len(rows) // 16)]  # a few rows tell the size well enough
                used = sum(_row_bytes(row) for row in sample) // len(sample) + 1
                size = max(1, min(STREAM_ROWS, STREAM_BYTES // used))

    def copy_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self._counted()
        with (
            self.conn.cursor() as cur,
            cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN".encode()) as copy,
        ):
            for row in rows:
                copy.write_row(row)


_CURSORS = itertools.count()
STREAM_BYTES = 8 * 1024 * 1024
STREAM_ROWS = 5000


def _row_bytes(row: Sequence[Any]) -> int:
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)


def _connect_timeout(url: str) -> int:
    """The URL's ``connect_timeout`` (libpq's own parameter, whole seconds) or the default:
    a wrong URL or a dead server fails within it."""
    try:
        given = conninfo_to_dict(url).get("connect_timeout")
        return CONNECT_TIMEOUT if given is None else int(given)
    except (psycopg.Error, ValueError, TypeError) as exc:
        raise MemoryValidationError(f"url is not a valid PostgreSQL URL: {exc}") from None


def _closed_by_server(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server closed this idle connection (a restart, ``pg_terminate_backend``,
    an idle timeout): it then has its goodbye or EOF to read. Costs a poll, not a round trip;
    only a connection with something to read is tested with a query."""
    if conn.closed:
        return True
    with contextlib.suppress(OSError, ValueError):
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
        if not readable:
            return False
    try:
        ConnectionPool.check_connection(conn)  # an empty query
    except psycopg.Error:
        return True
    return False


class PostgresBackend(Backend):
    """Short transactions on pooled connections; no server-side prepared statements by default,
    so it works behind a transaction-mode pooler. Row locks (``FOR UPDATE``) serialize writers
    of one conversation; serialization failures and deadlocks are retried."""

    dialect = "postgresql"

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        timeout: float = 60.0,
        max_size: int = 10,
    ) -> None:
        self.timeout = timeout
        self._closed = False
        self._owns_pool = pool is None
        if pool is None:
            url = url or ""
            connect_timeout = _connect_timeout(url)
            try:
                # One direct connection first: it fails with the server's own reason, where
                # the pool would retry in the background and report only that it gave up.
                psycopg.connect(url, connect_timeout=connect_timeout).close()
            except psycopg.Error as exc:
                raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max_size,
                kwargs={"prepare_threshold": None, "connect_timeout": connect_timeout},
                open=False,
                timeout=timeout,
            )
            try:
                pool.open(wait=True, timeout=timeout)
            except Exception as exc:
                raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self.pool = pool
        self.migrate("core", MIGRATIONS)

    def _run(self, fn: Callable[[Tx], T], *, read_only: bool, single_statement: bool) -> T:
        if self._closed:
            raise ConvostoreError("the store is closed")
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        stale = 0  # connections the server closed while they sat in the pool
        lost = False  # a connection already lost during this call
        while True:
            done = False  # fn returned: a write may be committing from here on

            def body(tx: Tx) -> T:
                nonlocal done
                result = fn(tx)
                done = True
                return result

            conn = None
            try:
                with self.pool.connection() as conn:
                    if _closed_by_server(conn):
                        conn.close()  # the pool replaces it; nothing was sent on it
                        stale += 1
                        if stale <= self.pool.max_size:
                            continue
                        raise StorageError("PostgreSQL closes every connection it opens")
                    if single_statement:
                        return self._autocommit(conn, body)
                    if read_only:
                        return self._snapshot(conn, body)
                    conn.read_only = False
                    with conn.transaction():
                        return body(PostgresTx(conn))
            except _RETRYABLE as exc:
                if time.monotonic() > deadline:
                    raise StorageError(f"PostgreSQL error: {exc}") from exc
            except psycopg.Error as exc:  # the pool's errors are psycopg errors too
                # A connection lost in the middle of a call (the server restarted or ended it
                # after the check above): run it again once where that cannot repeat a write,
                # that is a read, or a transaction that had not reached its COMMIT.
                safe = read_only or not (single_statement or done)
                if lost or not safe or conn is None or not conn.broken:
                    raise StorageError(f"PostgreSQL error: {exc}") from exc
                lost = True
                continue
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    @staticmethod
    def _snapshot(conn: psycopg.Connection[Any], fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ (no extra round trip):
        one snapshot for all its statements (at READ COMMITTED each would take its own)."""
        level = conn.isolation_level
        conn.read_only, conn.isolation_level = True, _READ_LEVEL
        try:
            with conn.transaction():
                return fn(PostgresTx(conn))
        finally:
            if not conn.broken:  # a dead connection is discarded: keep the real error
                conn.isolation_level = level

    @staticmethod
    def _autocommit(conn: psycopg.Connection[Any], fn: Callable[[Tx], T]) -> T:
        """Run ``fn``'s one statement as a transaction of its own: one round trip instead of
        BEGIN, statement, COMMIT."""
        before = conn.autocommit
        conn.autocommit = True
        try:
            return fn(PostgresTx(conn, single_statement=True))
        finally:
            if not conn.broken:  # a dead connection is discarded: keep the real error
                conn.autocommit = before

    def write(
        self, fn: Callable[[Tx], T], *, single_statement: bool = False, erasing: bool = False
    ) -> T:
        # erasing: deleted rows stay as dead tuples until VACUUM reclaims them (README)
        return self._run(fn, read_only=False, single_statement=single_statement)

    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        return self._run(fn, read_only=True, single_statement=single_statement)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        if self._owns_pool:
            self.pool.close()
