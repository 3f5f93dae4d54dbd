"""Storage backends: SQL and connections live here, business rules in the store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..errors import MemoryValidationError
from .base import Backend, Tx
from .rows import ChangeRow, ConversationRow, MessageRow
from .urls import _is_postgres, _sqlite_path, postgres_url

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["Backend", "ChangeRow", "ConversationRow", "MessageRow", "Tx", "open_backend"]

DEFAULT_URL = "sqlite:///convostore.db"


def open_backend(
    url: str,
    pool: ConnectionPool[Any] | None = None,
    replicas: Sequence[str] | None = None,
    max_replica_lag: float | None = None,
) -> Backend:
    """Open the backend a URL names: ``sqlite:///file.db``, ``postgresql://...``, ``memory://``;
    with ``replicas`` (PostgreSQL standbys of that primary) reads go to them (``replicas.py``)."""
    if replicas is not None or max_replica_lag is not None:
        return _replicated(url, pool, replicas or [], max_replica_lag)
    if pool is not None:
        from .postgres import PostgresBackend

        return PostgresBackend(pool=pool)
    if not isinstance(url, str):
        raise MemoryValidationError(f"url must be a str, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise MemoryValidationError(f"url {url!r} is not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme == "memory":
        from .sqlite import SqliteBackend

        return SqliteBackend(":memory:")
    if scheme == "sqlite":
        from .sqlite import SqliteBackend

        path = _sqlite_path(url, parts.netloc, parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return SqliteBackend(path, synchronous=query.get("synchronous", "NORMAL"))
    if scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+"):
        from .postgres import PostgresBackend

        conninfo, threshold = postgres_url(url)
        return PostgresBackend(url=conninfo, prepare_threshold=threshold)
    raise MemoryValidationError(
        f"url scheme {scheme!r} is not supported; use sqlite:///file.db, postgresql://... or memory://"
    )


def _replicated(
    url: str, pool: ConnectionPool[Any] | None, replicas: object, max_lag: object
) -> Backend:
    """The primary at ``url`` (or ``pool``) with its read replicas, all arguments checked
    before a connection is made."""
    if isinstance(replicas, str) or not isinstance(replicas, Sequence):
        raise MemoryValidationError(
            f"replicas must be a list of PostgreSQL URLs, got {type(replicas).__name__}",
            argument="replicas",
        )
    if len(replicas) > MAX_REPLICAS:
        raise MemoryValidationError(
            f"replicas: at most {MAX_REPLICAS} URLs, got {len(replicas)}", argument="replicas"
        )
    for i, replica in enumerate(replicas):
        if not isinstance(replica, str) or not _is_postgres(replica):
            raise MemoryValidationError(
                f"replicas[{i}] must be a postgresql:// URL, got"
                f" {replica[:40] if isinstance(replica, str) else type(replica).__name__!r}",
                argument="replicas",
            )
    if max_lag is None:
        max_lag = 2.0
    if (
        isinstance(max_lag, bool)
        or not isinstance(max_lag, (int, float))
        or not 0 < max_lag <= MAX_REPLICA_LAG
    ):
        raise MemoryValidationError(
            f"max_replica_lag must be seconds, more than 0 and at most {MAX_REPLICA_LAG},"
            f" got {max_lag!r}",
            argument="max_replica_lag",
        )
    if pool is None and not (isinstance(url, str) and _is_postgres(url)):
        raise MemoryValidationError(
            "replicas are PostgreSQL standbys: the store's url must be a postgresql:// URL",
            argument="replicas",
        )
    from .postgres import PostgresBackend
    from .replicas import ReplicatedBackend

    primary = open_backend(url, pool)
    assert isinstance(primary, PostgresBackend)
    conninfo = primary.pool.conninfo
    where = url if pool is None else (conninfo() if callable(conninfo) else conninfo)
    try:
        return ReplicatedBackend(primary, where, list(replicas), max_lag=float(max_lag))
    except BaseException:
        primary.close()
        raise


MAX_REPLICAS = 16
MAX_REPLICA_LAG = 3600
