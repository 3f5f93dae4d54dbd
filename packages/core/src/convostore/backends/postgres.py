"""PostgreSQL through psycopg 3 and a connection pool (yours or one made from the URL)."""

from __future__ import annotations

import functools
import random
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import StorageError
from .base import MIGRATIONS, Backend, T, Tx

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "PostgreSQL support needs psycopg: pip install 'convostore[postgres]'"
    ) from exc

_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
_READ_LEVEL = psycopg.IsolationLevel.REPEATABLE_READ


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
        self._owns_pool = pool is None
        if pool is None:
            pool = ConnectionPool(
                url or "",
                min_size=1,
                max_size=max_size,
                kwargs={"prepare_threshold": None},
                open=False,
                timeout=timeout,
            )
            try:
                pool.open(wait=True, timeout=timeout)
            except Exception as exc:
                raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self.pool = pool
        self.migrate(
            "core", [[s.format(collate='COLLATE "C"') for s in step] for step in MIGRATIONS]
        )

    def _run(self, fn: Callable[[Tx], T], *, read_only: bool, single_statement: bool) -> T:
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                with self.pool.connection() as conn:
                    if single_statement:
                        return self._autocommit(conn, fn)
                    if read_only:
                        return self._snapshot(conn, fn)
                    conn.read_only = False
                    with conn.transaction():
                        return fn(PostgresTx(conn))
            except _RETRYABLE as exc:
                if time.monotonic() > deadline:
                    raise StorageError(f"PostgreSQL error: {exc}") from exc
            except psycopg.Error as exc:  # the pool's errors are psycopg errors too
                raise StorageError(f"PostgreSQL error: {exc}") from exc
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
            conn.autocommit = before

    def write(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        return self._run(fn, read_only=False, single_statement=single_statement)

    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        return self._run(fn, read_only=True, single_statement=single_statement)

    def close(self) -> None:
        if self._owns_pool:
            self.pool.close()
