"""What a store's URL says: which database, the SQLite file, the PostgreSQL conninfo."""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import MemoryValidationError


def _is_postgres(url: str) -> bool:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    return scheme in ("postgresql", "postgres")


def postgres_url(url: str) -> tuple[str, int | None]:
    """A ``postgresql://`` URL as libpq reads it, and its ``prepare_threshold`` (psycopg's,
    not libpq's: taken out of the URL)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in pairs if k == "prepare_threshold"]
    if not given:
        return url.replace(parts.scheme + "://", "postgresql://", 1), None
    rest = urlencode([(k, v) for k, v in pairs if k != "prepare_threshold"])
    conninfo = urlunsplit(("postgresql", parts.netloc, parts.path, rest, parts.fragment))
    return conninfo, _prepare_threshold(given[-1])


_SQLITE_FORMS = "sqlite:///relative/path.db or sqlite:////absolute/path.db"


def _sqlite_path(url: str, netloc: str, path: str) -> str:
    """The file an ``sqlite:`` URL names; its directory must exist."""
    if not url[len("sqlite:") :].startswith("//") or netloc:
        raise MemoryValidationError(
            f"url {url!r} is not an SQLite URL this store reads; use {_SQLITE_FORMS}"
        )
    path = path[1:]  # sqlite:///rel.db -> rel.db, sqlite:////abs.db -> /abs.db
    if not path or path.endswith("/"):
        raise MemoryValidationError(f"url {url!r} names no file; use {_SQLITE_FORMS}")
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise MemoryValidationError(
            f"url {url!r}: the directory {directory!r} does not exist (the store creates the"
            " database file, not its directory)"
        )
    return path


def _prepare_threshold(value: str) -> int:
    """A URL's ``prepare_threshold`` (psycopg's: how many runs of a statement on a connection
    before it is prepared on the server)."""
    if value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    raise MemoryValidationError(
        f"url: prepare_threshold must be a whole number from 0 to 999999999 (runs of a"
        f" statement before it is prepared), got {value[:40]!r}",
        argument="url",
    )
