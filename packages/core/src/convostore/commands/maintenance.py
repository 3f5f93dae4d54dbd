"""Keeping a store in shape: ``check`` (the database's and the store's own invariants),
``prune`` (retention) and the registry of framework importers (``convostore import-from``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from ..backends import ChangeRow, ConversationRow, MessageRow, Tx
from ..backends import transfer as sql
from ..backends.memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from ..components import PruneRequest, components_named, install_hint
from ..conventions import UNTIL_KEY
from ..engine import changed, manager_of
from ..errors import MemoryValidationError
from ..store import ConversationStore
from ..validation import Limits, check_int, check_optional_id, decode_json, encode_metadata
from .common import Progress
from .export import Merged
from .export_format import Checker

SHOWN = 20
"""How many offending rows (or conversations, or memory stores) of one kind ``check`` names."""

_ORPHANS = {
    "convostore_messages": ("messages", "conversation"),
    "convostore_changes": ("change rows", "conversation"),
    "convostore_memory_versions": ("versions", "memory store"),
    "convostore_memory_entries": ("entries", "memory store"),
}


def check(store: ConversationStore) -> list[str]:
    """Every problem found, in words ([] when all is well), in one snapshot: the database's own
    integrity check; rows whose parent is missing; every row the store's own rules would
    refuse, read in the order of an export and judged as ``import`` judges its lines
    (``export_format.Checker``: ids, roles, JSON, limits, each conversation's ``message_count``
    and ``next_seq``, each memory store's versions, entries and counters); and components at
    a version this install does not know, or that no installed package registers (with the
    ``pip install`` that brings this project's)."""
    backend = store.backend

    def read(tx: Tx) -> list[str]:
        problems = sql.integrity_problems(tx, backend.dialect)
        for table, column, parent in sql.ORPHANS:
            what, whose = _ORPHANS[table]
            for pid, count in sql.orphans(tx, table, column, parent, SHOWN):
                problems.append(f"{count} {what} of {whose} {pid!r}, which does not exist")
        problems += _Rows(store.limits).read(tx)
        versions = sql.schema_versions(tx)
        known, missing = components_named(versions)
        for name in missing:
            problems.append(
                f"component {name!r}: no installed package registers it, so its tables are not"
                f" checked ({install_hint(name)})"
            )
        for component in known:
            if versions[component.name] > component.version:
                problems.append(
                    f"component {component.name!r} is at version {versions[component.name]};"
                    f" this install knows {component.version}: upgrade"
                    f" {component.package or component.name}"
                )
        return problems

    return backend.read(read)


def _json(what: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise MemoryValidationError(f"{what} is not valid JSON ({exc})") from None


def _text(what: str, data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryValidationError(
            f"{what} is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


Records = Iterator[dict[str, Any]]
"""A unit's rows as export records."""


class _Where:
    """The row being read, in words (a unit's records name it before decoding it)."""

    now = "its row"


class _Rows:
    """Every row of a database judged by ``export_format.Checker``, a unit at a time; a unit that
    breaks a rule is named with the rule and the row, and left (the next unit is judged on
    its own)."""

    def __init__(self, limits: Limits) -> None:
        self.checker = Checker(limits)
        self.problems: list[str] = []
        self.broken = {"conversations": 0, "memory stores": 0}

    def _unit(self, kind: str, name: str, records: Records, where: _Where) -> None:
        try:
            for record in records:
                self.checker.take(record)
            self.checker.close()
        except MemoryValidationError as exc:
            self.checker.abandon()
            problem = str(exc) if str(exc).startswith(name) else f"{name}, {where.now}: {exc}"
        else:
            return
        self.broken[kind] += 1
        if self.broken[kind] <= SHOWN:
            self.problems.append(problem)

    def read(self, tx: Tx) -> list[str]:
        messages = Merged(sql.stream_all_messages(tx))
        changes = Merged(sql.stream_changes(tx))
        for row in sql.stream_conversations(tx):
            where = _Where()
            records = _conversation(row, messages.of(row.id), changes.of(row.id), where)
            self._unit("conversations", f"conversation {row.id!r}", records, where)
        versions = Merged(sql.stream_memory_versions(tx))
        entries = Merged(sql.stream_memory_entries(tx))
        for store in sql.stream_memory_stores(tx):
            where = _Where()
            records = _memory_store(store, versions.of(store.id), entries.of(store.id), where)
            self._unit("memory stores", f"memory store {store.id!r}", records, where)
        for kind, count in self.broken.items():
            if count > SHOWN:
                self.problems.append(f"{count - SHOWN} more {kind} break a rule (not named)")
        return self.problems


def _conversation(
    row: ConversationRow,
    messages: Iterator[MessageRow],
    changes: Iterator[ChangeRow],
    where: _Where,
) -> Records:
    metadata = _json("its metadata", row.metadata)
    yield {"type": "conversation", **row._replace(metadata=metadata)._asdict()}
    for m in messages:
        where.now = f"message seq {m.seq} ({m.id!r})"
        content, metadata = _json("its content", m.content), _json("its metadata", m.metadata)
        yield {
            "type": "message",
            "conversation_id": row.id,
            **m._replace(content=content, metadata=metadata)._asdict(),
        }
    for c in changes:
        where.now = f"change seq {c.seq}"
        yield {"type": "change", "conversation_id": row.id, **c._asdict()}


def _memory_store(
    row: MemoryStoreRow,
    versions: Iterator[MemoryVersionRow],
    entries: Iterator[MemoryEntryRow],
    where: _Where,
) -> Records:
    metadata = _json("its metadata", row.metadata)
    yield {"type": "memory_store", **row._replace(metadata=metadata)._asdict()}
    for v in versions:
        where.now = f"version seq {v.seq} ({v.id!r})"
        yield {"type": "memory_version", **v._asdict(), "content": _text("its content", v.content)}
    for e in entries:
        where.now = f"entry at {e.path!r}"
        record = e._asdict()
        del record["redacted_at"], record["content"]  # read with a version, not stored
        yield {"type": "memory_entry", **record}


_PAGE = 500


def prune(
    store: ConversationStore,
    *,
    older_than_ms: int | None = None,
    keep_last: int | None = None,
    user_id: str | None = None,
    dry_run: bool = False,
    vacuum: bool = False,
    progress: Progress | None = None,
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
    then; the SQLite file rebuilt, smaller). ``progress(what, done, 0)`` after each batch.
    Return what went: ``[(what, how many), ...]``."""
    limits = store.limits
    age = None if older_than_ms is None else check_int("older_than_ms", older_than_ms)
    keep = None if keep_last is None else check_int("keep_last", keep_last)
    uid = check_optional_id("user_id", user_id, limits)
    backend = store.backend
    report: list[tuple[str, int]] = []
    if age is not None:
        report.append(("conversations", _delete_old(store, age, uid, dry_run, progress)))
    if keep is not None:
        report.append(("messages", _trim_long(store, keep, uid, dry_run, progress)))
    request = PruneRequest(older_than_ms=age, keep_last=keep, user_id=uid, dry_run=dry_run)
    present, _ = components_named(backend.read(sql.schema_versions))
    for component in present:
        if component.prune is not None:
            report += component.prune(store, request)
    if vacuum and not dry_run:
        tables = [t.name for c in present for t in c.tables]
        backend.vacuum(tables)
        report.append(("tables rewritten without the deleted rows", len(tables)))
    return report


def _delete_old(
    store: ConversationStore,
    age: int,
    uid: str | None,
    dry_run: bool,
    progress: Progress | None,
) -> int:
    """Delete (or count) the unmanaged conversations last active ``age`` ms ago or longer."""
    backend = store.backend
    cutoff = store.clock() - age
    gone = 0
    after: tuple[int, str] | None = None
    while True:
        rows = backend.read(
            functools.partial(
                sql.conversations_older_than, cutoff=cutoff, user_id=uid, after=after, limit=_PAGE
            )
        )
        if not rows:
            return gone
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
        if progress is not None:
            progress("conversations deleted", gone, 0)


def _trim_long(
    store: ConversationStore,
    keep: int,
    uid: str | None,
    dry_run: bool,
    progress: Progress | None,
) -> int:
    """Trim (or count) the unmanaged conversations to their newest ``keep`` messages."""
    backend = store.backend
    trimmed = 0
    last_id: str | None = None
    while True:
        rows = backend.read(
            functools.partial(
                sql.conversations_longer_than, keep=keep, user_id=uid, after=last_id, limit=_PAGE
            )
        )
        if not rows:
            return trimmed
        last_id = rows[-1].id
        rows = [r for r in rows if manager_of(r.metadata) is None]
        if dry_run:
            trimmed += sum(r.message_count - keep for r in rows)
            continue
        for r in rows:
            trimmed += backend.write(
                functools.partial(_trim, cid=r.id, keep=keep, store=store), erasing=True
            )
        if progress is not None:
            progress("messages trimmed", trimmed, 0)


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
        row = changed(tx, row, "message.deleted", now, mid)
    tx.save_conversation(row)
    return gone
