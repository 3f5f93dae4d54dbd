"""``convostore import-from``: the registry of framework importers (entry-point group
``convostore.importers``), each an adapter's."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any, Protocol

from ..errors import MemoryValidationError
from ..store import ConversationStore
from .common import Progress

# -- importers -------------------------------------------------------------------------------

IMPORTERS_GROUP = "convostore.importers"
"""Entry-point group of ``import-from`` importers: ``name = "module:function"``, an
``Importer``: ``(store, source, *, user_id=None, progress=None) -> [(what, how many), ...]``.

- It reads ``source`` (the framework's own file, folder or URL) as hostile: it constructs no
  object the source names, and bad data is a ``MemoryValidationError`` naming the file, the
  line or record and the cause, in one line.
- It writes each conversation (thread, session, transcript) whole or not at all, and only
  what this store lacks, so running it again resumes and writes nothing twice. An error
  raised after some conversations were written says which in a note (``add_note``).
- ``user_id`` owns every conversation it writes; one that another user owns is an
  ``OwnershipError`` (or a ``ConflictError`` naming it), never taken over.
- ``progress(what, done, total)`` (a ``transfer.Progress``), when given, is called as it goes.
- It returns what was new: ``imported {n} {what}`` is printed for each; a ``what`` that
  starts with ``skipped `` names what it left out (printed ``skipped {n} {the rest}``)."""

KNOWN_IMPORTERS = {
    "langgraph": "convostore-langgraph",
    "openai-sqlite": "convostore-openai",
    "claude-code": "convostore-claude",
}
"""The importers of this project's adapters, to name the package when one is missing."""


class Importer(Protocol):
    """What an ``IMPORTERS_GROUP`` entry point loads (see there)."""

    def __call__(
        self,
        store: ConversationStore,
        source: str,
        *,
        user_id: str | None = None,
        progress: Progress | None = None,
    ) -> list[tuple[str, int]]: ...


def import_report(report: list[tuple[str, int]]) -> list[str]:
    """An importer's report as the lines ``import-from`` prints."""
    lines = []
    for what, count in report:
        verb, rest = (
            ("skipped", what[len("skipped ") :])
            if what.startswith("skipped ")
            else (
                "imported",
                what,
            )
        )
        lines.append(f"{verb} {count:,} {rest}")
    return lines


@functools.cache
def _importers() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=IMPORTERS_GROUP)}


def importer(kind: str) -> Importer:
    """The importer registered as ``kind``; an ``ImportError`` naming the package to install
    when it is one of this project's and not installed."""
    entry = _importers().get(kind)
    if entry is not None:
        loaded: Any = entry.load()
        return loaded  # type: ignore[no-any-return]
    dist = KNOWN_IMPORTERS.get(kind)
    if dist is not None:
        raise ImportError(f"import-from {kind} needs the {dist} package: pip install {dist}")
    known = sorted({*_importers(), *KNOWN_IMPORTERS})
    raise MemoryValidationError(
        f"kind {kind!r} is not an importer; use one of {', '.join(known)}", argument="kind"
    )
