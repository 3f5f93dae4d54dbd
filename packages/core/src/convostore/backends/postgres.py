"""PostgreSQL through psycopg 3 and a connection pool (yours or one made from the URL)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import random
import select
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .. import telemetry
from ..errors import ClosedError, MemoryValidationError, StorageError
from ..search_text import index_text
from .base import (
    _MSG,
    SAVE_CONVERSATION,
    Backend,
    Migrations,
    T,
    Tx,
    saved_values,
)
from .rows import ConversationRow, MessageRow
from .schema import MIGRATIONS
from .search import EXTENSION_HINT, PostgresSearch

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import pq
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "PostgreSQL support needs psycopg: pip install 'convostore[postgres]'"
    ) from exc

_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
_READ_LEVEL = psycopg.IsolationLevel.REPEATABLE_READ
_CHANNEL = "convostore_changes"
_NOTIFY_FUNCTION = f"""CREATE OR REPLACE FUNCTION convostore_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{_CHANNEL}', COALESCE(NEW.id, OLD.id));
    RETURN NULL;
END $$"""
# Every change of a conversation (append, update, delete, clear, metadata) updates its row.
_NOTIFY_TRIGGER = (
    "CREATE OR REPLACE TRIGGER convostore_notify AFTER INSERT OR UPDATE OR DELETE"
    " ON convostore_conversations FOR EACH ROW EXECUTE FUNCTION convostore_notify()"
)
CONNECT_TIMEOUT = 5
"""Seconds to wait for a connection unless the URL says ``?connect_timeout=N``."""
# The primary's WAL position after a commit, as a number of bytes (``replicas.py``): what it
# has flushed, past the commit's record once a synchronous commit returns, and always sent to
# the standbys; after a relaxed commit (``Tx.relaxed_commit``: not flushed yet) the end of
# what was inserted, which the WAL writer flushes within a few ``wal_writer_delay``.
POSITION = (
    b"SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn,"
    b" pg_current_wal_insert_lsn() - '0/0'::pg_lsn"
)


def _rows(cur: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``cur``'s statement, [] for one that returns none. Told from its result's
    status: ``cur.description`` builds a ``Column`` a column to say it (14 us for 8 columns,
    more than reading a page of 21 rows)."""
    res = cur.pgresult
    if res is None or not (res.nfields or res.status == pq.ExecStatus.TUPLES_OK):
        return []
    return cur.fetchall()


class PostgresTx(PostgresSearch, Tx):
    lock_suffix = " FOR UPDATE"
    one_statement_writes = True

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        single_statement: bool = False,
        transaction: bool = False,
    ) -> None:
        self.conn = conn
        self.single_statement = single_statement
        self.pipeline: psycopg.Pipeline | None = None
        self._to_begin = transaction  # BEGIN is ours to send, with the first statement
        self._syncs = 0  # round trips waited for in pipeline mode (see prefetch)
        self.trips = 0  # every round trip (a traced call's convostore.round_trips)
        self._stack = contextlib.ExitStack()

    def _begin(self, *, pipelined: bool = True) -> None:
        """Send BEGIN with the first statement: in pipeline mode, unless that statement
        cannot be pipelined (COPY, a server-side cursor); a transaction begun without the
        pipeline stays without it."""
        if self._to_begin:
            self._to_begin = False
            if pipelined:
                self.pipeline = self._stack.enter_context(self.conn.pipeline())
            else:
                self.trips += 1
            self.conn.execute(b"BEGIN")

    def commit(self, *, position: bool = False) -> int | None:
        """Send COMMIT (with what is still to send) and wait for it; errors of statements
        sent without waiting are raised here. ``position``: the WAL position after the
        COMMIT too, asked in the same round trip (None when nothing was sent)."""
        asked = None
        if not self._to_begin:
            self.conn.execute(b"COMMIT")
            self.trips += 1  # now, or with the pipeline's last sync
            if position:
                asked = self.conn.execute(POSITION)
                self.trips += self.pipeline is None
        self._stack.close()
        if self.pipeline is not None:  # what was prefetched is read from here on
            self.pipeline = None
            self._syncs += 1
        return None if asked is None else _position(asked.fetchone(), self.relaxed_commit)

    def abandon(self, exc: BaseException) -> None:
        """Leave pipeline mode after ``exc`` (errors found doing so are not raised: ``exc``
        is the one the caller sees); the caller rolls back."""
        self._stack.__exit__(type(exc), exc, exc.__traceback__)

    @staticmethod
    @functools.lru_cache(maxsize=512)
    def _sql(sql: str) -> bytes:
        return sql.replace("%", "%%").replace("?", "%s").encode()

    def lock_schema(self, component: str) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", [zlib.crc32(component.encode())])

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._counted()
        self._begin()
        cur = self.conn.execute(self._sql(sql), params)
        self.trips += 1
        if self.pipeline is not None:
            self.pipeline.sync()  # one round trip for this and every statement sent before
            self._syncs += 1
        return _rows(cur)

    def append_and_save(self, cid: str, rows: Sequence[MessageRow], row: ConversationRow) -> None:
        """One statement: the conversation's row updated in a data-modifying ``WITH``, the
        messages inserted (up to 100; more take the two statements of the base class)."""
        if not 0 < len(rows) <= 100:
            super().append_and_save(cid, rows, row)
            return
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
        self.send(
            f"WITH saved AS ({SAVE_CONVERSATION} WHERE id = ?)"
            f" INSERT INTO convostore_messages (conversation_id, {_MSG}, search_text)"
            f" VALUES {values}",
            [
                *saved_values(row),
                row.id,
                *(v for r in rows for v in (cid, *r, index_text(r.content))),
            ],
        )

    def append_if_unchanged(
        self,
        seen: ConversationRow,
        rows: Sequence[MessageRow],
        row: ConversationRow,
        *,
        new_ids: bool = False,
    ) -> Callable[[], bool]:
        """One call of the function ``convostore_append``, sent now (one round trip outside a
        transaction, none of its own in one): the conversation's row updated where every
        column still holds ``seen`` (a concurrent change makes the update match nothing,
        re-checked after its row lock at READ COMMITTED) and, with ``new_ids``, where none of
        ``rows``' ids is taken; the messages inserted only if it matched."""
        appended = self.prefetch(
            "SELECT convostore_append(?::text, ?::text, ?::bigint, ?::bigint, ?::bigint,"
            " ?::bigint, ?::text, ?::text, ?::bigint, ?::bigint, ?::bigint, ?::text,"
            " ?::boolean, ?::json)",
            [
                *seen,
                *saved_values(row),
                new_ids,
                json.dumps([(*r, index_text(r.content)) for r in rows]),
            ],
        )
        return lambda: bool(appended()[0][0])

    def append_counted(
        self,
        seen: ConversationRow,
        rows: Sequence[MessageRow],
        row: ConversationRow,
        *,
        room: int,
        new_ids: bool = False,
    ) -> Callable[[], ConversationRow | None]:
        """One call of the function ``convostore_append_counted``, sent now."""
        appended = self.prefetch(
            "SELECT convostore_append_counted(?::text, ?::text, ?::bigint, ?::text, ?::bigint,"
            " ?::text, ?::bigint, ?::bigint, ?::boolean, ?::json)",
            [
                seen.id,
                seen.user_id,
                seen.created_at,
                seen.metadata,
                seen.next_seq,
                row.user_id,
                row.last_message_at,
                room,
                new_ids,
                json.dumps([(*r, index_text(r.content)) for r in rows]),
            ],
        )

        def written() -> ConversationRow | None:
            counted = appended()[0][0]
            return (
                None
                if counted is None
                else row._replace(
                    last_message_at=counted[0], message_count=counted[1], next_seq=counted[2]
                )
            )

        return written

    def prefetch(self, sql: str, params: Sequence[Any] = ()) -> Callable[[], list[tuple[Any, ...]]]:
        self._counted()
        self._begin()
        cur = self.conn.execute(self._sql(sql), params)
        if self.pipeline is None:
            self.trips += 1
            ready = _rows(cur)
            return lambda: ready
        sent = self._syncs

        def rows() -> list[tuple[Any, ...]]:
            if self._syncs == sent and self.pipeline is not None:
                self.pipeline.sync()  # nothing waited for it yet
                self._syncs += 1
                self.trips += 1
            return _rows(cur)

        return rows

    def execute_batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        self._begin()
        if self.pipeline is None:
            return super().execute_batch(statements)
        self._counted(len(statements))
        cursors = [self.conn.execute(self._sql(sql), params) for sql, params in statements]
        self.pipeline.sync()
        self._syncs += 1
        self.trips += 1
        return [_rows(cur) for cur in cursors]

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._counted()
        self._begin()
        self.conn.execute(self._sql(sql), params)
        self.trips += self.pipeline is None  # else: with the next sync

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = self._counted_rows(rows)
        self._begin()
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), rows)
        self.trips += self.pipeline is None

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """A server-side cursor fetched in chunks of about ``STREAM_BYTES``: the chunk's row
        count follows the rows' size (a few rows when they are megabytes each). In pipeline
        mode (a write that has sent statements) the rows are read at once instead."""
        self._begin(pipelined=False)
        if self.pipeline is not None:
            yield from self.execute(sql, params)
            return
        self._counted()
        self.trips += 3  # DECLARE, the description of its rows, CLOSE
        with self.conn.cursor(name=f"convostore_stream_{next(_CURSORS)}") as cur:
            cur.execute(self._sql(sql), params)
            size = 64
            while True:
                self.trips += 1
                rows = cur.fetchmany(size)
                if not rows:
                    break
                yield from rows
                sample = rows[:: max(1, len(rows) // 16)]  # a few rows tell the size well enough
                used = sum(_row_bytes(row) for row in sample) // len(sample) + 1
                size = max(1, min(STREAM_ROWS, STREAM_BYTES // used))

    def copy_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self._begin(pipelined=False)
        if self.pipeline is not None:  # COPY cannot run in pipeline mode
            super().copy_rows(table, columns, rows)
            return
        self._counted()
        self.trips += 1
        with (
            self.conn.cursor() as cur,
            cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN".encode()) as copy,
        ):
            for row in rows:
                copy.write_row(row)


_CURSORS = itertools.count()


def pool_observations(pool: ConnectionPool[Any]) -> list[tuple[str, float, dict[str, Any]]]:
    """A pool's numbers as OpenTelemetry's database client conventions name them."""
    stats = pool.get_stats()
    named = {"db.client.connection.pool.name": pool.name}
    used = stats["pool_size"] - stats["pool_available"]
    return [
        ("db.client.connection.count", used, {**named, "db.client.connection.state": "used"}),
        (
            "db.client.connection.count",
            stats["pool_available"],
            {**named, "db.client.connection.state": "idle"},
        ),
        ("db.client.connection.max", stats["pool_max"], named),
        ("db.client.connection.pending_requests", stats["requests_waiting"], named),
    ]


def _count(round_trips: int, retries: int = 0) -> None:
    """Tell a traced call (if one is traced) what one attempt of it cost."""
    counts = telemetry.counting()
    if counts is not None:
        counts.add(round_trips, retries)


STREAM_BYTES = 8 * 1024 * 1024
STREAM_ROWS = 5000


def _position(row: tuple[Any, ...] | None, relaxed: bool = False) -> int | None:
    """The first column of ``row`` as a WAL position (the second after a relaxed commit)."""
    at = 1 if relaxed else 0
    return None if row is None or row[at] is None else int(row[at])


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
    """Short transactions on pooled connections; no server-side prepared statements unless
    ``prepare_threshold`` (psycopg's) is given, so it works behind a transaction-mode pooler. Row locks (``FOR UPDATE``) serialize writers
    of one conversation; serialization failures and deadlocks are retried."""

    dialect = "postgresql"
    conditional_append = True
    joined_owner_check = True
    # Told each write's WAL position when read replicas follow this server (``replicas.py``).
    on_commit: Callable[[int], None] | None = None

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        timeout: float = 60.0,
        max_size: int = 10,
        prepare_threshold: int | None = None,
    ) -> None:
        self.timeout = timeout
        self._closed = False
        self._listener: psycopg.Connection[Any] | None = None
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
                # Autocommit: the calls of one statement (most reads, the one-statement
                # append) then set nothing on the connection; the others send BEGIN.
                kwargs={
                    "prepare_threshold": prepare_threshold,
                    "connect_timeout": connect_timeout,
                    "autocommit": True,
                },
                open=False,
                timeout=timeout,
            )
            try:
                pool.open(wait=True, timeout=timeout)
            except Exception as exc:
                raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self.pool = pool
        self.migrate("core", MIGRATIONS)
        telemetry.watch(self)

    def observe(self) -> list[tuple[str, float, dict[str, Any]]]:
        """Its pool's connections (used, idle), bound and waiting calls, for the metrics."""
        return [] if self._closed else pool_observations(self.pool)

    def _run(self, fn: Callable[[Tx], T], *, read_only: bool, single_statement: bool) -> T:
        if self._closed:
            raise ClosedError("the store is closed")
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
                        return self._autocommit(conn, body, None if read_only else self.on_commit)
                    if read_only:
                        return self._snapshot(conn, body)
                    return self._pipelined(conn, body, self.on_commit)
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
                _count(0, retries=1)
                continue
            _count(0, retries=1)
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    @staticmethod
    def _snapshot(conn: psycopg.Connection[Any], fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ (no extra round trip):
        one snapshot for all its statements (at READ COMMITTED each would take its own). The
        connection's settings are put back after (a pool of yours gets its connections as
        they were)."""
        level, read_only = conn.isolation_level, conn.read_only
        conn.read_only, conn.isolation_level = True, _READ_LEVEL
        tx = PostgresTx(conn)
        try:
            with conn.transaction():
                return fn(tx)
        finally:
            _count(tx.trips + 2)  # BEGIN, COMMIT
            if not conn.broken:  # a dead connection is discarded: keep the real error
                conn.read_only, conn.isolation_level = read_only, level

    @staticmethod
    def _pipelined(
        conn: psycopg.Connection[Any],
        fn: Callable[[Tx], T],
        on_commit: Callable[[int], None] | None = None,
    ) -> T:
        """Run ``fn`` between BEGIN and COMMIT in pipeline mode: a statement whose rows ``fn``
        reads costs one round trip with every statement sent before it; the others
        (``Tx.send``) travel with the next one or with the COMMIT, where their errors are
        raised. An append to an existing conversation takes two round trips."""
        autocommit = conn.autocommit
        if not autocommit:  # a pool of yours: BEGIN and COMMIT are sent in the pipeline
            conn.autocommit = True
        tx = PostgresTx(conn, transaction=True)
        try:
            result = fn(tx)
            position = tx.commit(position=on_commit is not None)
        except BaseException as exc:
            tx.abandon(exc)
            if not conn.broken and conn.pgconn.transaction_status != pq.TransactionStatus.IDLE:
                tx.trips += 1
                with contextlib.suppress(psycopg.Error):  # keep the real error
                    conn.execute(b"ROLLBACK")
            raise
        finally:
            _count(tx.trips)
            if not autocommit and not conn.broken:
                conn.autocommit = False
        if on_commit is not None and position is not None:
            on_commit(position)
        return result

    @staticmethod
    def _autocommit(
        conn: psycopg.Connection[Any],
        fn: Callable[[Tx], T],
        on_commit: Callable[[int], None] | None = None,
    ) -> T:
        """Run ``fn``'s one statement as a transaction of its own: one round trip instead of
        BEGIN, statement, COMMIT (and one more for the WAL position, for ``on_commit``)."""
        before = conn.autocommit
        if not before:  # a pool of yours
            conn.autocommit = True
        tx = PostgresTx(conn, single_statement=True)
        try:
            result = fn(tx)
            if on_commit is not None:
                tx.trips += 1
                on_commit(_position(conn.execute(POSITION).fetchone(), tx.relaxed_commit) or 0)
            return result
        finally:
            _count(tx.trips)
            if not before and not conn.broken:  # a dead one is discarded: keep the real error
                conn.autocommit = False

    def write(
        self, fn: Callable[[Tx], T], *, single_statement: bool = False, erasing: bool = False
    ) -> T:
        # erasing: deleted rows stay as dead tuples until VACUUM reclaims them (README)
        return self._run(fn, read_only=False, single_statement=single_statement)

    def enable_notifications(self) -> None:
        self._listening()  # LISTEN first: no NOTIFY of the writes after this call is missed

        def install(tx: Tx) -> None:
            tx.execute(_NOTIFY_FUNCTION)
            tx.execute(_NOTIFY_TRIGGER)

        self.write(install)

    def _listening(self) -> psycopg.Connection[Any]:
        """The connection of its own that LISTENs on the channel, opened on first use."""
        if self._closed:
            raise ClosedError("the store is closed")
        if self._listener is None or self._listener.closed:
            conninfo = self.pool.conninfo
            kwargs = self.pool.kwargs
            try:
                listener = psycopg.connect(
                    conninfo() if callable(conninfo) else conninfo,
                    **{**((kwargs() if callable(kwargs) else kwargs) or {}), "autocommit": True},
                )
                listener.execute(f"LISTEN {_CHANNEL}".encode())
            except psycopg.Error as exc:
                raise StorageError(f"PostgreSQL error: {exc}") from exc
            self._listener = listener
        return self._listener

    def wait_for_change(self, timeout: float) -> bool:
        listener = self._listening()
        try:
            woke = False
            for _ in listener.notifies(timeout=timeout, stop_after=1):
                woke = True
            while woke and any(True for _ in listener.notifies(timeout=0)):
                pass  # a burst of writes wakes once
        except psycopg.Error as exc:
            listener.close()
            raise StorageError(f"PostgreSQL error: {exc}") from exc
        return woke

    def vacuum(self, tables: Sequence[str]) -> None:
        if self._closed:
            raise ClosedError("the store is closed")
        try:
            with self.pool.connection() as conn:
                before = conn.autocommit
                conn.autocommit = True  # VACUUM cannot run inside a transaction block
                try:
                    for table in tables:
                        conn.execute(f"VACUUM FULL {table}".encode())
                finally:
                    if not conn.broken:
                        conn.autocommit = before
        except psycopg.Error as exc:
            raise StorageError(f"PostgreSQL error: {exc}") from exc

    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        return self._run(fn, read_only=True, single_statement=single_statement)

    def migrate(
        self, component: Migrations | str, steps: Sequence[Sequence[str]] | None = None
    ) -> None:
        """``Backend.migrate``; a role that may not create pg_trgm (the search index's
        extension) is told which statement to run as a superuser."""
        try:
            super().migrate(component, steps)
        except StorageError as exc:
            cause = exc.__cause__
            if not isinstance(cause, psycopg.errors.InsufficientPrivilege):
                raise
            where = cause.diag.context or ""
            if "pg_trgm" in where or "convostore_extensions" in where:
                raise StorageError(f"{EXTENSION_HINT} ({cause})") from cause
            raise

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.close()
        if self._owns_pool:
            self.pool.close()
