"""Read replicas: writes on the primary, reads on a streaming standby that has replayed them.

Every write through a store of this process records the primary's WAL position after its
COMMIT (``PostgresBackend.on_commit``), per primary server (``Positions``). A read sent to a
replica asks ``pg_last_wal_replay_lsn()`` in the same round trip, before its snapshot is
taken; the answer is kept only if the replica had replayed that position. Otherwise the read
waits for the replica up to ``max_lag`` seconds, then runs on the primary and the replica gets
no reads until the watcher finds it caught up. A replica that cannot be reached, or that is
more than ``max_lag`` seconds behind the primary (checked every ``max_lag / 2`` seconds by a
thread of the store), gets no reads either; a log line (logger ``convostore.replicas``) says
when one leaves and when it comes back. Nothing is ever written on a replica: its
connections are read-only and writes, migrations included, go to the primary.
"""

from __future__ import annotations

import collections
import copy
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from .. import telemetry
from ..errors import ClosedError, MemoryValidationError
from .base import Backend, T, Tx
from .postgres import (
    POSITION,
    PostgresBackend,
    PostgresTx,
    _closed_by_server,
    _connect_timeout,
    _position,
    pool_observations,
)
from .urls import postgres_url

log = logging.getLogger("convostore.replicas")

MAX_LAG = 2.0
"""Seconds a replica may be behind: the longest a read waits for a replica to replay this
process's last write before it reads the primary, and the lag beyond which a replica gets no
reads (``max_lag=``)."""

_REPLAYED = b"SELECT pg_last_wal_replay_lsn() - '0/0'::pg_lsn"


def server_of(url: str) -> str:
    """``host:port/dbname`` of a URL, for log lines (no user, no password)."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise MemoryValidationError(f"replicas: not a valid PostgreSQL URL: {exc}") from None
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


class Positions:
    """The WAL position each primary server reached after the last write this process made
    there: shared by every store of the process, so a read follows any write before it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reached: dict[str, int] = {}

    def wrote(self, server: str, position: int) -> None:
        with self._lock:
            if position > self._reached.get(server, 0):
                self._reached[server] = position

    def of(self, server: str) -> int:
        return self._reached.get(server, 0)


POSITIONS = Positions()


class Replica:
    """One standby: its connections (read-only, made on demand) and whether it gets reads."""

    def __init__(self, given: str, max_size: int) -> None:
        url, threshold = postgres_url(given)
        self.url = url
        self.name = server_of(url)
        self.connect_timeout = _connect_timeout(url)
        self.healthy = True
        self.replayed = 0  # the highest replay position seen on it
        self.lag: int | None = None  # bytes behind the primary at the watcher's last look
        self.pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            kwargs={
                "connect_timeout": self.connect_timeout,
                "autocommit": True,
                "prepare_threshold": threshold,
                "options": " ".join(
                    [
                        str(conninfo_to_dict(url).get("options") or ""),
                        "-c default_transaction_read_only=on",
                    ]
                ).strip(),
            },
            open=False,
            timeout=self.connect_timeout,
        )
        self.pool.open(wait=False)

    def leave(self, why: str) -> None:
        self.replayed = 0  # a standby restarted may start over from an earlier position
        if self.healthy:
            self.healthy = False
            log.warning("replica %s gets no reads: %s", self.name, why)

    def back(self) -> None:
        if not self.healthy:
            self.healthy = True
            log.warning("replica %s is back: it gets reads again", self.name)


class _Behind(Exception):
    """The replica had not replayed the position the read needs."""

    def __init__(self, replayed: int) -> None:
        self.replayed = replayed


class ReplicatedBackend(Backend):
    """A ``PostgresBackend`` for writes and the reads that decide them, and replicas for the
    other reads (``Backend.read``), with read-your-writes (the module's docstring)."""

    dialect = "postgresql"
    conditional_append = True
    joined_owner_check = True

    def __init__(
        self, primary: PostgresBackend, url: str, replicas: Sequence[str], *, max_lag: float
    ) -> None:
        self._primary = primary
        self.server = server_of(url)
        self.max_lag = max_lag
        self.replicas = [Replica(r, primary.pool.max_size) for r in replicas]
        self.routed: collections.Counter[str] = collections.Counter()  # reads: where they ran
        self._turn = itertools.count()
        self._reached = 0  # the primary's newest position known here
        self._pinned = False  # on_primary(): every read on the primary
        primary.on_commit = self._wrote
        self._wrote(primary.read(_sample, single_statement=True))  # its migrations, just run
        self._stop = threading.Event()
        self._watcher = threading.Thread(
            target=self._watch, name="convostore-replicas", daemon=True
        )
        self._watcher.start()
        telemetry.watch(self)

    def observe(self) -> list[tuple[str, float, dict[str, Any]]]:
        """Each replica's pool and its lag (bytes of WAL still to replay, as the watcher last
        saw it; none while it cannot say), for the metrics."""
        found: list[tuple[str, float, dict[str, Any]]] = []
        for replica in [] if self.closed else self.replicas:
            found += pool_observations(replica.pool)
            if replica.lag is not None:
                found.append(
                    ("convostore.replica.lag", replica.lag, {"convostore.replica": replica.name})
                )
        return found

    # -- what every backend does: writes on the primary --------------------------------------

    @property
    def primary(self) -> Backend:
        return self._primary

    def on_primary(self) -> ReplicatedBackend:
        """This backend (same connections, same replicas' health) whose reads all go to the
        primary: for a read that decides a write, which a replica behind another process's
        write would answer with what that write replaced."""
        twin = copy.copy(self)
        twin._pinned = True
        return twin

    def _wrote(self, position: int) -> None:
        self._reached = max(self._reached, position)
        POSITIONS.wrote(self.server, position)

    def position(self) -> int:
        """The WAL position a read must see: this process's last write on the primary."""
        return POSITIONS.of(self.server)

    def follow(self, position: int) -> None:
        """Make later reads of this process see the primary up to ``position`` (a position
        another process wrote, handed on by its caller). A position the primary has not
        reached is refused: it would send every read to the primary after a wait."""
        if position > self._reached:
            inserted = self._primary.read(_inserted, single_statement=True)
            self._reached = max(self._reached, inserted)
            if position > inserted:
                raise MemoryValidationError(
                    f"position {format_position(position)} is ahead of the primary's"
                    f" {format_position(self._reached)}: not a position it wrote",
                    argument="position",
                )
        POSITIONS.wrote(self.server, position)

    def write(
        self, fn: Callable[[Tx], T], *, single_statement: bool = False, erasing: bool = False
    ) -> T:
        return self._primary.write(fn, single_statement=single_statement, erasing=erasing)

    def enable_notifications(self) -> None:
        self._primary.enable_notifications()

    def wait_for_change(self, timeout: float) -> bool:
        return self._primary.wait_for_change(timeout)

    def vacuum(self, tables: Sequence[str]) -> None:
        self._primary.vacuum(tables)

    @property
    def closed(self) -> bool:
        return self._primary.closed

    def close(self) -> None:
        self._stop.set()
        self._primary.close()
        for replica in self.replicas:
            replica.pool.close()
        if self._watcher is not threading.current_thread():
            self._watcher.join(timeout=10)

    # -- reads: on a replica that has replayed this process's writes -------------------------

    def read(self, fn: Callable[[Tx], T], *, single_statement: bool = False) -> T:
        if self.closed:
            raise ClosedError("the store is closed")
        need = self.position()
        replica = None if self._pinned else self._pick()
        if replica is not None:
            deadline = time.monotonic() + self.max_lag
            while True:
                try:
                    result = self._on_replica(replica, fn, need, single_statement)
                except _Behind as behind:
                    if not self._wait(replica, need, behind.replayed, deadline):
                        replica.leave(f"it did not replay a write within {self.max_lag} s")
                        break
                    continue
                except psycopg.Error as exc:
                    log.debug("a read on replica %s failed: %s", replica.name, exc)
                    if _unreachable(exc):
                        replica.leave(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
                    break  # a query cancelled by recovery, ...: the primary answers this one
                self.routed[replica.name] += 1
                return result
        self.routed["primary"] += 1
        return self._primary.read(fn, single_statement=single_statement)

    def _pick(self) -> Replica | None:
        healthy = [r for r in self.replicas if r.healthy]
        return healthy[next(self._turn) % len(healthy)] if healthy else None

    @staticmethod
    def _on_replica(
        replica: Replica, fn: Callable[[Tx], T], need: int, single_statement: bool
    ) -> T:
        """``fn`` on ``replica`` in a snapshot taken after its replay position was read;
        ``_Behind`` if that position is short of ``need``. A position seen replayed already
        needs no question (replay only moves on): the read is then the same as on the primary.
        Otherwise one statement travels with the question (its snapshot taken after it, in
        one pipeline); several run in one REPEATABLE READ snapshot after it."""
        with replica.pool.connection() as conn:
            if _closed_by_server(conn):  # the standby restarted since: a fresh connection
                conn.close()
                raise psycopg.OperationalError("the replica closed its connection")
            if need <= replica.replayed or not single_statement:
                if need > replica.replayed:  # asked first: the snapshot is taken after
                    replayed = _replayed(replica, conn.execute(_REPLAYED).fetchone())
                    if replayed < need:
                        raise _Behind(replayed)
                if single_statement:
                    return fn(PostgresTx(conn, single_statement=True))
                conn.autocommit = False
                try:
                    return PostgresBackend._snapshot(conn, fn)
                finally:
                    if not conn.broken:
                        conn.autocommit = True
            with conn.pipeline() as pipeline:
                asked = conn.execute(_REPLAYED)
                tx = PostgresTx(conn, single_statement=True)
                tx.pipeline = pipeline
                failed: Exception | None = None
                try:
                    result = fn(tx)
                except psycopg.Error:
                    raise
                except Exception as exc:  # judged after the position: it may be stale
                    failed = exc
                pipeline.sync()
                replayed = _replayed(replica, asked.fetchone())
        if replayed < need:
            raise _Behind(replayed)
        if failed is not None:
            raise failed
        return result

    def _wait(self, replica: Replica, need: int, replayed: int, deadline: float) -> bool:
        """Whether ``replica`` replays ``need`` before ``deadline`` (asked every few ms)."""
        delay = 0.0005
        while replayed < need:
            if time.monotonic() + delay > deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
            try:
                with replica.pool.connection() as conn:
                    replayed = _position(conn.execute(_REPLAYED).fetchone()) or 0
            except psycopg.Error:
                return False
            replica.replayed = max(replica.replayed, replayed)
        return True

    # -- the watcher: lag and health, every max_lag / 2 seconds ------------------------------

    def _watch(self) -> None:
        """Sample the primary's position; a replica that has not replayed the sample taken
        ``max_lag`` seconds ago (or cannot say) leaves the reads, and comes back once it has."""
        samples: collections.deque[tuple[float, int]] = collections.deque()
        interval = min(max(self.max_lag / 2, 0.05), 5.0)
        links: dict[str, psycopg.Connection[Any]] = {}
        try:
            while not self._stop.wait(interval):
                now = time.monotonic()
                try:
                    samples.append((now, self._primary.read(_sample, single_statement=True)))
                    self._reached = max(self._reached, samples[-1][1])
                except Exception:  # the primary's own calls report its failures
                    continue
                while len(samples) > 1 and samples[1][0] <= now - self.max_lag:
                    samples.popleft()
                due = samples[0][1] if samples[0][0] <= now - self.max_lag else 0
                for replica in self.replicas:
                    self._judge(replica, due, links)
        finally:
            for link in links.values():
                link.close()

    def _judge(self, replica: Replica, due: int, links: dict[str, psycopg.Connection[Any]]) -> None:
        try:
            link = links.get(replica.url)
            if link is None or link.closed or _closed_by_server(link):
                links[replica.url] = link = psycopg.connect(
                    replica.url, autocommit=True, connect_timeout=replica.connect_timeout
                )
            replayed = _position(link.execute(_REPLAYED).fetchone())
        except psycopg.Error as exc:
            links.pop(replica.url, None)
            replica.lag = None
            replica.leave(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
            return
        replica.lag = None if replayed is None else max(0, self._reached - replayed)
        if replayed is None:
            replica.leave("it is not a standby (pg_last_wal_replay_lsn() is NULL)")
        elif replayed < due:
            replica.leave(f"it is more than {self.max_lag} s behind the primary")
        else:
            replica.replayed = max(replica.replayed, replayed)
            replica.back()


def format_position(position: int) -> str:
    """A WAL position as PostgreSQL writes it (``0/16B3748``)."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def _replayed(replica: Replica, row: tuple[Any, ...] | None) -> int:
    replayed = _position(row)
    if replayed is None:
        raise psycopg.OperationalError("it is not a standby (pg_last_wal_replay_lsn() is NULL)")
    replica.replayed = max(replica.replayed, replayed)
    return replayed


def _inserted(tx: Tx) -> int:
    """The end of the primary's WAL: no write's position is beyond it."""
    return int(tx.execute(POSITION.decode())[0][1])


def _sample(tx: Tx) -> int:
    """The primary's flushed position: what its standbys can have replayed."""
    return int(tx.execute(POSITION.decode())[0][0])


def _unreachable(exc: psycopg.Error) -> bool:
    """A failure of the replica itself (down, unreachable, restarting), not of one query."""
    return isinstance(exc, psycopg.OperationalError) and not isinstance(
        exc, psycopg.errors.QueryCanceled | psycopg.errors.SerializationFailure
    )
