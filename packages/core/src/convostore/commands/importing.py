"""``convostore import``: an export written into a store, a conversation (or memory store) per
transaction, after the whole file passed ``verify_export``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from ..backends import (
    ChangeRow,
    ConversationRow,
    MessageRow,
    Tx,
)
from ..backends import transfer as sql
from ..backends.memories import MemoryStoreRow, MemoryVersionRow
from ..errors import (
    ConflictError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
)
from ..store import ConversationStore
from ..validation import (
    Limits,
    decode_json,
)
from .common import (
    BATCH_BYTES,
    BATCH_ROWS,
    Progress,
)
from .export_format import (
    HEADS,
    Checker,
    ImportReport,
    bad_line,
    open_export,
    parse_line,
    verify_lines,
)

# -- import: writing ---------------------------------------------------------------------------


def _restore_changes(tx: Tx, cid: str, changes: Sequence[ChangeRow]) -> None:
    """Insert the change rows not stored yet; a different one at a seq is a conflict."""
    stored = sql.changes_by_seq(tx, cid, changes[0].seq, changes[-1].seq)
    for change in changes:
        old = stored.get(change.seq)
        if old is None:
            tx.insert_change(cid, change)
        elif old != change:
            raise ConflictError(
                f"conversation_id {cid!r}: the stored change at seq {change.seq} differs from"
                " the imported one"
            )


def _restore(  # noqa: PLR0917 - a conversation's part
    tx: Tx,
    limits: Limits,
    conversation: ConversationRow,
    messages: Sequence[MessageRow],
    final: bool,
    changes: Sequence[ChangeRow],
) -> int:
    """Write some messages (``seq`` rising) and change rows of a conversation exactly as they
    were stored (ids, seqs, times, metadata, owner); ``final`` (its last part) also sets its
    metadata and last activity. Messages already stored at their seq are skipped (so a
    second import changes nothing); a different one there, a message id stored at another
    seq, or a conversation of another owner or creation time is a ``ConflictError``. Return
    how many messages were added."""
    cid = conversation.id
    row = tx.conversation(cid, lock=True)
    fresh = row is None
    if row is None:
        row = conversation._replace(message_count=0, next_seq=1)
    elif (row.created_at, row.user_id) != (conversation.created_at, conversation.user_id):
        raise ConflictError(
            f"conversation_id {cid!r} already exists in this store with another owner or"
            " creation time"
        )
    new: list[MessageRow] = list(messages) if fresh else []
    if messages and not fresh:
        stored = sql.messages_by_seq(tx, cid, messages[0].seq, messages[-1].seq)
        taken = tx.messages_by_id(cid, [m.id for m in messages if m.seq not in stored])
        for m in messages:
            old = stored.get(m.seq)
            if old is not None:
                if old != m:
                    raise ConflictError(
                        f"conversation_id {cid!r}: the stored message at seq {m.seq}"
                        " differs from the imported one"
                    )
            elif m.id in taken:
                raise ConflictError(
                    f"conversation_id {cid!r}: message_id {m.id!r} is stored at another seq"
                )
            else:
                new.append(m)
    if messages:
        count = row.message_count + len(new)
        if count > limits.max_messages_per_conversation:
            raise MemoryQuotaExceededError(
                f"conversation_id {cid!r} would hold {count} messages; the limit is"
                f" {limits.max_messages_per_conversation} messages per conversation"
            )
        row = row._replace(message_count=count, next_seq=max(row.next_seq, messages[-1].seq + 1))
    if final:
        row = row._replace(
            metadata=conversation.metadata,
            last_message_at=conversation.last_message_at,
            next_seq=max(row.next_seq, conversation.next_seq),
        )
    if fresh:
        sql.insert_conversation_row(tx, row)
    if new:
        tx.insert_messages(cid, new)
    if not fresh:
        sql.restore_conversation_row(tx, row)
    if changes:
        _restore_changes(tx, cid, changes)
    return len(new)


class _ConversationWrite:
    """A conversation being imported, its messages written a batch at a time."""

    def __init__(self, tx: Tx, limits: Limits, conv: ConversationRow) -> None:
        self.tx, self.limits, self.conv = tx, limits, conv
        self.messages: list[MessageRow] = []
        self.changes: list[ChangeRow] = []
        self.size = self.added = 0

    def add(self, kind: str, row: Any) -> None:
        if kind == "message":
            self.messages.append(row)
            self.size += len(row.content) + len(row.metadata or "")
        else:
            self.changes.append(row)
        if len(self.messages) + len(self.changes) >= BATCH_ROWS or self.size >= BATCH_BYTES:
            self._write(final=False)

    def _write(self, *, final: bool) -> None:
        self.added += _restore(self.tx, self.limits, self.conv, self.messages, final, self.changes)
        self.messages, self.changes, self.size = [], [], 0

    def finish(self, report: ImportReport) -> None:
        self._write(final=True)
        report.conversations += 1
        report.messages += self.added


class _MemoryStoreWrite:
    """A memory store being imported: a new one written as it was; one already in the store
    (the same owner, name and creation time) continued with the versions it lacks, as long
    as it holds no version the export does not. A version redacted on either side stays (or
    becomes) redacted: an import never brings back erased content."""

    def __init__(self, tx: Tx, row: MemoryStoreRow) -> None:
        self.tx, self.row = tx, row
        stored = tx.memory_store(row.id, lock=True)
        self.fresh = stored is None
        self.changed = self.emptied = False
        self.added = 0
        self.versions: list[MemoryVersionRow] = []
        self.size = 0
        if stored is None:
            tx.insert_memory_store(row)
            return
        mine = (stored.user_id, stored.name, stored.description, stored.created_at)
        if mine != (row.user_id, row.name, row.description, row.created_at) or decode_json(
            stored.metadata
        ) != decode_json(row.metadata):
            raise ConflictError(
                f"memory_store_id {row.id!r} already exists in this store with another owner,"
                " name, description, metadata or creation time"
            )
        if stored.next_seq > row.next_seq:
            raise ConflictError(
                f"memory_store_id {row.id!r}: the stored memory store holds versions the"
                f" export does not (up to seq {stored.next_seq - 1}, the export's end at"
                f" {row.next_seq - 1}): it changed after the export"
            )

    def add(self, kind: str, row: Any) -> None:
        if kind == "memory_version":
            self.versions.append(row)
            self.size += row.size
            if len(self.versions) >= BATCH_ROWS or self.size >= BATCH_BYTES:
                self._write_versions()
            return
        self._write_versions()
        if not self.fresh and not self.changed:
            return  # the same versions: the same entries
        if not self.fresh and not self.emptied:
            sql.delete_memory_entries(self.tx, self.row.id)
            self.emptied = True
        self.tx.insert_memory_entry(row)

    def _write_versions(self) -> None:
        versions, self.versions, self.size = self.versions, [], 0
        if not versions:
            return
        tx, sid = self.tx, self.row.id
        stored = (
            {}
            if self.fresh
            else sql.memory_versions_by_seq(tx, sid, versions[0].seq, versions[-1].seq)
        )
        for v in versions:
            old = stored.get(v.seq)
            if old is None:
                tx.insert_memory_version(v)
                self.added += 1
                self.changed = True
                continue
            if old._replace(redacted_at=None, content=None) != v._replace(
                redacted_at=None, content=None
            ) or (old.redacted_at is None and v.redacted_at is None and old.content != v.content):
                raise ConflictError(
                    f"memory_store_id {sid!r}: the stored version at seq {v.seq} differs from"
                    " the imported one"
                )
            if v.redacted_at is not None and old.redacted_at is None:
                tx.redact_memory_version(sid, v.seq, v.redacted_at)

    def finish(self, report: ImportReport) -> None:
        self._write_versions()
        if not self.fresh and self.changed:
            if not self.emptied:
                sql.delete_memory_entries(self.tx, self.row.id)
            sql.restore_memory_store_row(self.tx, self.row)
        report.memory_stores += 1
        report.memory_versions += self.added


@dataclass
class _At:
    """A place in an export: a byte offset, its line number, the checker's state there."""

    offset: int
    line: int
    checker: Checker


def _write_group(
    tx: Tx, f: IO[bytes], path: str, at: _At, limits: Limits
) -> tuple[_At, bool, ImportReport]:
    """Write whole units of the export from ``at`` until a batch's worth is written (a unit,
    whatever its size, is never split between transactions): where the next group starts,
    whether that is the end, and what this group wrote. Run again from ``at`` when the
    database retries the transaction."""
    f.seek(at.offset)
    checker = at.checker.copy()
    offset, number = at.offset, at.line
    done = ImportReport()
    unit: _ConversationWrite | _MemoryStoreWrite | None = None
    rows = size = 0
    while True:
        line = f.readline()
        try:
            record = parse_line(line)
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "end" or kind in HEADS:
                if unit is not None:
                    checker.close()
                    unit.finish(done)
                    done.line = number - 1
                    unit = None
                if kind == "end":
                    if f.readline():
                        raise MemoryValidationError("an end line before the end of the file")
                    return _At(offset, number, checker), True, done
                if rows >= BATCH_ROWS or size >= BATCH_BYTES:
                    return _At(offset, number, checker), False, done
            kind, row = checker.take(record)
        except (ValueError, RecursionError) as exc:  # the file changed since it was checked
            raise bad_line(path, number, str(exc)) from None
        if kind == "conversation":
            unit = _ConversationWrite(tx, limits, row)
        elif kind == "memory_store":
            unit = _MemoryStoreWrite(tx, row)
        elif unit is not None:
            unit.add(kind, row)
        rows += 1
        size += len(line)
        offset += len(line)
        number += 1


def import_jsonl(
    store: ConversationStore, path: str, *, progress: Progress | None = None
) -> ImportReport:
    """Import an export file. The whole file is read and checked first (``verify_export``:
    header, end line, checksum, then every record validated like any input): a file that
    breaks a rule writes nothing. Then each conversation and each memory store is written in
    one transaction (several small ones share one), so none is ever left half imported.
    Importing the same file twice changes nothing. An error while writing (a conflict with
    stored data, the database failing, an interruption) leaves what was written before it
    written: the error's note (``__notes__``) says what that was, and importing the same file
    again continues after it."""
    limits = store.limits
    report = ImportReport()
    with open_export(path) as f:
        totals = verify_lines(f, path, limits, progress)
        f.seek(0)
        first = f.readline()
        at, finished = _At(len(first), 2, Checker(limits)), False
        try:
            while not finished:

                def group(tx: Tx, start: _At = at) -> tuple[_At, bool, ImportReport]:
                    return _write_group(tx, f, path, start, limits)

                at, finished, done = store.backend.write(group)
                for key in ("conversations", "messages", "memory_stores", "memory_versions"):
                    setattr(report, key, getattr(report, key) + getattr(done, key))
                report.line = max(report.line, done.line)
                if progress is not None:
                    for key in ("conversations", "messages", "memory_stores"):
                        if totals.get(key):
                            progress(key.replace("_", " "), at.checker.totals[key], totals[key])
        except (ConvostoreError, KeyboardInterrupt) as exc:
            if report.line > 1 or report.conversations or report.memory_stores:
                exc.add_note(
                    f"{report.written()} were imported before it (through line {report.line});"
                    " nothing after that was written: import the same file again to continue"
                    " (what is imported already is skipped)"
                )
            else:
                exc.add_note("nothing was written")
            raise
    return report
