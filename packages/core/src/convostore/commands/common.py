"""What the commands share: the export format's name and version, batch sizes, the
progress callback, their errors, and how a URL is resolved and opened."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..backends import DEFAULT_URL
from ..backends.urls import _sqlite_path
from ..errors import (
    ConflictError,
    ConvostoreError,
    MemoryValidationError,
)
from ..store import ConversationStore

FORMAT = "convostore-export"
VERSION = 2
READS = (1, 2)
"""The format versions ``import`` reads (version 1 holds no memory stores)."""
BATCH_ROWS = 5000
BATCH_BYTES = 16 * 1024 * 1024

Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``, called after each batch."""


class DestinationNotEmptyError(ConflictError):
    """``migrate`` would copy into a database that already holds data (``force`` replaces it)."""


class VerificationError(ConvostoreError):
    """After ``migrate``, a table of the destination differs from the source's."""


def resolve_url(url: str | None) -> str:
    """The URL a store opens for ``url`` (None: ``$CONVOSTORE_URL`` or the default file)."""
    return url or os.environ.get("CONVOSTORE_URL") or DEFAULT_URL


def open_existing(url: str | None, *, argument: str = "url", **options: Any) -> ConversationStore:
    """A store on a database that must already exist: an SQLite URL naming no file is a
    ``MemoryValidationError`` (opening a store would create an empty one)."""
    url = resolve_url(url)
    parts = urlsplit(url)
    if parts.scheme.lower() == "sqlite":
        path = _sqlite_path(url, parts.netloc, parts.path)  # a malformed URL: its own error
        if not os.path.exists(path):
            raise MemoryValidationError(
                f"{argument} {url!r}: there is no database file {path!r}", argument=argument
            )
    return ConversationStore(url, **options)


def redact(url: str) -> str:
    """``url`` without its password, for messages and the migration marker."""
    head, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    auth, _, host = rest.partition("@")
    user = auth.split(":", 1)[0]
    return f"{head}://{user}@{host}"


COUNTED = ("conversations", "messages", "memory_stores", "memory_versions", "memory_entries")
"""The counts of an export's end line (version 2; version 1 counts the first two)."""
