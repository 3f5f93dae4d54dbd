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


class PostgresTx(Tx):
    lock_suffix = " FOR UPDATE"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    @staticmethod
    @functools.lru_cache(maxsize=512)
    def _sql(sql: str) -> bytes:
        return sql.replace("%", "%%").replace("?", "%s").encode()

    def lock_schema(self, component: str) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", [zlib.crc32(component.encode())])

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(self._sql(sql), params)
        return cur.fetchall() if cur.description is not None else []

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
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

    def _run(self, fn: Callable[[Tx], T], *, read_only: bool) -> T:
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                with self.pool.connection() as conn:
                    conn.read_only = read_only  # BEGIN READ ONLY: no extra round trip
                    with conn.transaction():
                        return fn(PostgresTx(conn))
            except _RETRYABLE as exc:
                if time.monotonic() > deadline:
                    raise StorageError(f"PostgreSQL error: {exc}") from exc
            except psycopg.Error as exc:  # the pool's errors are psycopg errors too
                raise StorageError(f"PostgreSQL error: {exc}") from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    def write(self, fn: Callable[[Tx], T]) -> T:
        return self._run(fn, read_only=False)

    def read(self, fn: Callable[[Tx], T]) -> T:
        return self._run(fn, read_only=True)

    def close(self) -> None:
        if self._owns_pool:
            self.pool.close()
