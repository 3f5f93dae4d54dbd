"""Keeping a store in shape: ``check`` (the database's and the store's own invariants),
``prune`` (retention) and the registry of framework importers (``convostore import-from``)."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any, Protocol

from .backends import Tx
from .backends import transfer as sql
from .components import PruneRequest, registered_components
from .conventions import UNTIL_KEY
from .errors import MemoryValidationError
from .store import ConversationStore, _changed, manager_of
from .transfer import Progress
from .validation import check_int, check_optional_id, decode_json, encode_metadata

SHOWN = 20
"""How many offending rows of one kind ``check`` names."""


def check(store: ConversationStore) -> list[str]:
    """Every problem found, in words ([] when all is well): the database's own integrity
    check, then the store's invariants, in one snapshot: each conversation's
    ``message_count`` equals its messages, ``next_seq`` is above every ``seq`` it holds, no
    message lacks its conversation, and every component is at a version this install knows."""
    backend = store.backend

    def read(tx: Tx) -> list[str]:
        problems = sql.integrity_problems(tx, backend.dialect)
        for cid, count, real in sql.miscounted_conversations(tx, SHOWN):
            problems.append(
                f"conversation {cid!r}: message_count is {count} but it holds {real} messages"
            )
        for cid, next_seq, top in sql.stale_next_seq(tx, SHOWN):
            problems.append(f"conversation {cid!r}: next_seq is {next_seq} but it holds seq {top}")
        for cid, count in sql.orphan_messages(tx, SHOWN):
            problems.append(f"{count} messages of conversation {cid!r}, which does not exist")
        known = {c.name: c.version for c in registered_components()}
        for name, version in sql.schema_versions(tx).items():
            if name not in known:
                problems.append(f"component {name!r}: no installed package registers it")
            elif version > known[name]:
                problems.append(
                    f"component {name!r} is at version {version}; this install knows {known[name]}"
                )
        return problems

    return backend.read(read)


_PAGE = 500


def prune(
    store: ConversationStore,
    *,
    older_than_ms: int | None = None,
    keep_last: int | None = None,
    user_id: str | None = None,
    dry_run: bool = False,
    vacuum: bool = False,
) -> list[tuple[str, int]]:
    """Retention. ``older_than_ms``: delete the conversations last active longer ago than
    that (each re-checked under its lock, so one written to meanwhile stays). Conversations
    a component manages (``managedBy``) are left to that component's own retention, which
    removes them with what they mirror (a LangGraph thread). ``keep_last``:
    trim each conversation to its newest ``keep_last`` messages; a ``summarizedUntil`` naming
    a trimmed message is removed (every kept message is newer, so the summary convention
    still reads right). ``user_id``: only that user's. ``dry_run``: count, delete nothing.
    Components with a retention of their own (LangGraph threads) prune theirs alike.
    ``vacuum``: then rewrite every table of the store without the deleted rows
    (``Backend.vacuum``: ``VACUUM FULL`` on PostgreSQL, where they stay as dead tuples until
    then; the SQLite file rebuilt, smaller). Return what went: ``[(what, how many), ...]``."""
    limits = store.limits
    age = None if older_than_ms is None else check_int("older_than_ms", older_than_ms)
    keep = None if keep_last is None else check_int("keep_last", keep_last)
    uid = check_optional_id("user_id", user_id, limits)
    backend = store.backend
    report: list[tuple[str, int]] = []

    if age is not None:
        cutoff = store.clock() - age
        gone = 0
        after: tuple[int, str] | None = None
        while True:
            rows = backend.read(
                functools.partial(
                    sql.conversations_older_than,
                    cutoff=cutoff,
                    user_id=uid,
                    after=after,
                    limit=_PAGE,
                )
            )
            if not rows:
                break
            after = (rows[-1].last_message_at, rows[-1].id)
            rows = [r for r in rows if manager_of(r.metadata) is None]
            if dry_run:
                gone += len(rows)
                continue

            def delete(tx: Tx, ids: list[str] = [r.id for r in rows]) -> int:  # noqa: B006
                count = 0
                for cid in sorted(ids):  # id order: concurrent deletes cannot deadlock
                    row = tx.conversation(cid, lock=True)
                    if row is not None and row.last_message_at < cutoff:
                        tx.delete_conversation(cid)
                        count += 1
                return count

            gone += backend.write(delete, erasing=True)
        report.append(("conversations", gone))

    if keep is not None:
        trimmed = 0
        last_id: str | None = None
        while True:
            rows = backend.read(
                functools.partial(
                    sql.conversations_longer_than,
                    keep=keep,
                    user_id=uid,
                    after=last_id,
                    limit=_PAGE,
                )
            )
            if not rows:
                break
            last_id = rows[-1].id
            rows = [r for r in rows if manager_of(r.metadata) is None]
            if dry_run:
                trimmed += sum(r.message_count - keep for r in rows)
                continue
            for r in rows:
                trimmed += backend.write(
                    functools.partial(_trim, cid=r.id, keep=keep, store=store), erasing=True
                )
        report.append(("messages", trimmed))

    request = PruneRequest(older_than_ms=age, keep_last=keep, user_id=uid, dry_run=dry_run)
    present = backend.read(sql.schema_versions)
    for component in registered_components():
        if component.prune is not None and component.name in present:
            report += component.prune(store, request)
    if vacuum and not dry_run:
        tables = [t.name for c in registered_components() if c.name in present for t in c.tables]
        backend.vacuum(tables)
        report.append(("tables rewritten without the deleted rows", len(tables)))
    return report


def _trim(tx: Tx, *, cid: str, keep: int, store: ConversationStore) -> int:
    """Delete all but the newest ``keep`` messages of ``cid`` (locked); how many went."""
    row = tx.conversation(cid, lock=True)
    if row is None or row.message_count <= keep or manager_of(row.metadata) is not None:
        return 0
    oldest = sql.oldest_message_ids(tx, cid, row.message_count - keep)
    if not oldest:
        return 0
    gone = sql.delete_messages_through(tx, cid, oldest[-1][0])
    metadata = row.metadata
    meta = decode_json(metadata) or {}
    if meta.get(UNTIL_KEY) in {mid for _, mid in oldest}:
        del meta[UNTIL_KEY]
        metadata = encode_metadata(meta, store.limits)
    row = row._replace(message_count=row.message_count - gone, metadata=metadata)
    now = store.clock()
    for _, mid in oldest:  # the change feed tells live views which messages went
        row = _changed(tx, row, "message.deleted", now, mid)
    tx.save_conversation(row)
    return gone


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
