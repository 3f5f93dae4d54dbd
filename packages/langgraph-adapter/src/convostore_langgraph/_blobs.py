"""The rows of channel values (blobs) as the saver writes and reads them: plain data, no
framework import, so that the SQL (``_schema``) and the command line need no LangGraph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_BlobKey = tuple[str, str, str, str]  # thread_id, ns, channel, version


@dataclass(slots=True)
class _BlobRow:
    type: str
    data: bytes | None
    base: str | None
    keep: int | None
    depth: int
    tail: int
    snap: int


@dataclass(slots=True)
class _Blob:
    """A blob row about to be written, or (``in_row``) a small value for the checkpoint row."""

    channel: str
    version: str
    type: str
    data: bytes | None
    base: str | None = None
    keep: int | None = None
    depth: int = 0
    tail: int = 0
    snap: int = 0
    value: Any = None  # the full list, to fall back to a snapshot if the base has gone
    in_row: bool = False
    # (version, n): the first n items equal the saver's own copies of that version, which
    # the head of this one reuses (also when the row is a snapshot)
    equal: tuple[str, int] | None = None
