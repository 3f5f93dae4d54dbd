"""``convostore export``: the core's data in the JSON Lines format (``convostore-export``, version 2;
the format is described in the core README), streamed from one snapshot: the memory used does not
grow with the size of the store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ..backends import (
    Backend,
    ChangeRow,
    ConversationRow,
    MessageRow,
    Tx,
)
from ..backends import transfer as sql
from ..backends.memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from ..components import (
    CORE,
    SCHEMA_TABLE,
)
from ..errors import (
    MemoryValidationError,
    StorageError,
)
from ..ids import now_ms
from ..models import ROLES
from ..store import ConversationStore
from ..validation import (
    check_id,
    check_optional_id,
)
from .common import (
    BATCH_ROWS,
    COUNTED,
    FORMAT,
    VERSION,
    Progress,
)

# -- export ----------------------------------------------------------------------------------

_dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _raw(text: str | None) -> str:
    """A stored JSON text as it goes into a line (stored texts never hold a raw newline; one
    that did would be written again without it)."""
    if text is None:
        return "null"
    return text if "\n" not in text else _dump(json.loads(text))


def _conversation_line(r: ConversationRow) -> str:
    return (
        f'{{"type":"conversation","id":{_dump(r.id)},"user_id":{_dump(r.user_id)},'
        f'"created_at":{r.created_at},"last_message_at":{r.last_message_at},'
        f'"message_count":{r.message_count},"next_seq":{r.next_seq},'
        f'"metadata":{_raw(r.metadata)}}}'
    )


def _message_line(cid_json: str, m: MessageRow) -> str:
    """A message's line; ``cid_json`` is its conversation id, already JSON."""
    updated = "null" if m.updated_at is None else m.updated_at
    return (
        f'{{"type":"message","conversation_id":{cid_json},"seq":{m.seq},"id":{_dump(m.id)},'
        f'"role":{_ROLE_JSON.get(m.role) or _dump(m.role)},"content":{_raw(m.content)},'
        f'"metadata":{_raw(m.metadata)},"created_at":{m.created_at},"updated_at":{updated}}}'
    )


def _change_line(cid_json: str, c: ChangeRow) -> str:
    """A change's line (an update, delete, clear or metadata change; appends are messages)."""
    return (
        f'{{"type":"change","conversation_id":{cid_json},"seq":{c.seq},"kind":{_dump(c.kind)},'
        f'"message_id":{_dump(c.message_id)},"created_at":{c.created_at}}}'
    )


def _memory_store_line(r: MemoryStoreRow) -> str:
    return (
        f'{{"type":"memory_store","id":{_dump(r.id)},"user_id":{_dump(r.user_id)},'
        f'"name":{_dump(r.name)},"description":{_dump(r.description)},'
        f'"metadata":{_raw(r.metadata)},"created_at":{r.created_at},'
        f'"updated_at":{r.updated_at},"entry_count":{r.entry_count},'
        f'"total_size":{r.total_size},"next_seq":{r.next_seq}}}'
    )


def _memory_version_line(sid_json: str, v: MemoryVersionRow) -> str:
    """A memory version's line, with its content as text (None once redacted)."""
    try:
        content = None if v.content is None else v.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StorageError(
            f"memory store {v.store_id!r}, version seq {v.seq}: the stored content is not"
            f" UTF-8 ({exc.reason} at byte {exc.start}); convostore check lists such rows"
        ) from None
    redacted = "null" if v.redacted_at is None else v.redacted_at
    return (
        f'{{"type":"memory_version","store_id":{sid_json},"seq":{v.seq},"id":{_dump(v.id)},'
        f'"entry_id":{_dump(v.entry_id)},"version":{v.version},'
        f'"operation":{_dump(v.operation)},"path":{_dump(v.path)},"size":{v.size},'
        f'"created_at":{v.created_at},"redacted_at":{redacted},"content":{_dump(content)}}}'
    )


def _memory_entry_line(sid_json: str, e: MemoryEntryRow) -> str:
    return (
        f'{{"type":"memory_entry","store_id":{sid_json},"path":{_dump(e.path)},'
        f'"id":{_dump(e.id)},"version":{e.version},"version_seq":{e.version_seq},'
        f'"size":{e.size},"created_at":{e.created_at},"updated_at":{e.updated_at}}}'
    )


class Merged:
    """The rows of a stream ordered by a parent's id (a conversation's, a memory store's),
    handed out one parent at a time, parents in the same order (rows of a parent not asked
    for are skipped: orphans, which ``convostore check`` reports)."""

    def __init__(self, rows: Iterator[tuple[str, Any]]) -> None:
        self.rows = rows
        self.pending = next(rows, None)

    def of(self, cid: str) -> Iterator[Any]:
        while self.pending is not None and self.pending[0] < cid:
            self.pending = next(self.rows, None)
        while self.pending is not None and self.pending[0] == cid:
            yield self.pending[1]
            self.pending = next(self.rows, None)

    def drain(self) -> None:
        for _ in self.rows:
            pass


_ROLE_JSON: dict[str, str] = {role: _dump(role) for role in ROLES}
_CHUNK = 1 << 20  # bytes written (and hashed) at a time


class _Lines:
    """Lines written to a file about a megabyte at a time, hashed as they go."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.digest = out, hashlib.sha256()
        self.pending: list[str] = []
        self.size = 0

    def emit(self, line: str) -> None:
        self.pending.append(line + "\n")
        self.size += len(line)
        if self.size >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        data = "".join(self.pending).encode()
        self.digest.update(data)
        self.out.write(data)
        self.pending, self.size = [], 0


def _changes_of(tx: Tx, cid: str) -> Iterator[ChangeRow]:
    return (change for _, change in sql.stream_changes(tx, cid))


@dataclass
class ExportReport:
    conversations: int = 0
    messages: int = 0
    memory_stores: int = 0
    memory_versions: int = 0
    memory_entries: int = 0
    left_out: list[tuple[str, int]] = field(default_factory=list)
    """Tables of the database outside the export that hold rows: (name, rows)."""

    def counts(self) -> dict[str, int]:
        """What the end line counts, by its keys."""
        return {key: getattr(self, key) for key in COUNTED}


class _Export:
    """One export: the lines written, what they counted."""

    def __init__(self, out: IO[bytes], progress: Progress | None) -> None:
        self.lines = _Lines(out)
        self.progress = progress
        self.report = ExportReport()

    def _tick(self, what: str, done: int) -> None:
        if self.progress is not None and done % BATCH_ROWS == 0:
            self.progress(what, done, 0)

    def conversation(
        self, row: ConversationRow, messages: Iterator[MessageRow], changes: Iterator[ChangeRow]
    ) -> None:
        emit, report = self.lines.emit, self.report
        emit(_conversation_line(row))
        report.conversations += 1
        cid_json = _dump(row.id)
        for m in messages:
            emit(_message_line(cid_json, m))
            report.messages += 1
            self._tick("messages", report.messages)
        for c in changes:
            emit(_change_line(cid_json, c))

    def memory_store(
        self,
        row: MemoryStoreRow,
        versions: Iterator[MemoryVersionRow],
        entries: Iterator[MemoryEntryRow],
    ) -> None:
        emit, report = self.lines.emit, self.report
        emit(_memory_store_line(row))
        report.memory_stores += 1
        sid_json = _dump(row.id)
        for v in versions:
            emit(_memory_version_line(sid_json, v))
            report.memory_versions += 1
            self._tick("memory versions", report.memory_versions)
        for e in entries:
            emit(_memory_entry_line(sid_json, e))
            report.memory_entries += 1

    def named(self, tx: Tx, ids: Sequence[str]) -> None:
        """The conversations ``ids``, in that order."""
        for cid in ids:
            row = tx.conversation(cid)
            if row is None:
                raise MemoryValidationError(
                    f"conversation_ids: no conversation {cid!r} in this store",
                    argument="conversation_ids",
                )
            self.conversation(row, sql.stream_messages(tx, cid), _changes_of(tx, cid))

    def owned(self, tx: Tx, uid: str) -> None:
        """``uid``'s conversations and memory stores."""
        for row in sql.stream_conversations(tx, uid):
            self.conversation(row, sql.stream_messages(tx, row.id), _changes_of(tx, row.id))
        for s in sql.stream_memory_stores(tx, uid):
            self.memory_store(
                s,
                (v for _, v in sql.stream_memory_versions(tx, s.id)),
                (e for _, e in sql.stream_memory_entries(tx, s.id)),
            )

    def everything(self, tx: Tx) -> None:
        """Every table read once along its primary key, merged: (parent id, seq or path)."""
        messages = Merged(sql.stream_all_messages(tx))
        changes = Merged(sql.stream_changes(tx))
        for row in sql.stream_conversations(tx):
            self.conversation(row, messages.of(row.id), changes.of(row.id))
        messages.drain()
        changes.drain()
        versions = Merged(sql.stream_memory_versions(tx))
        entries = Merged(sql.stream_memory_entries(tx))
        for s in sql.stream_memory_stores(tx):
            self.memory_store(s, versions.of(s.id), entries.of(s.id))
        versions.drain()
        entries.drain()


def export_jsonl(
    store: ConversationStore,
    out: IO[bytes],
    *,
    user_id: str | None = None,
    conversation_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    """Write the core's data to ``out``, from one consistent snapshot of the database, a line
    at a time: every conversation with its messages and change rows, then every memory store
    with its versions and live entries; ``user_id``: only that user's conversations and memory
    stores; ``conversation_ids``: only those conversations. The adapters' own tables
    (LangGraph checkpoints, CrewAI memory) are not in it (``ExportReport.left_out`` names
    those holding rows): ``migrate`` copies them."""
    limits = store.limits
    uid = check_optional_id("user_id", user_id, limits)
    ids = None
    if conversation_ids is not None:
        ids = [check_id("conversation_ids[]", c, limits) for c in conversation_ids]
    export = _Export(out, progress)

    def read(tx: Tx) -> None:
        if ids is not None:
            export.named(tx, list(dict.fromkeys(ids)))
        elif uid is not None:
            export.owned(tx, uid)
        else:
            export.everything(tx)

    header = {"format": FORMAT, "version": VERSION, "exported_at": now_ms()}
    export.lines.emit(_dump(header))
    store.backend.read(read)
    export.lines.flush()
    report = export.report
    end = {"type": "end", **report.counts(), "sha256": export.lines.digest.hexdigest()}
    out.write(_dump(end).encode() + b"\n")
    out.flush()
    if progress is not None:
        progress("messages", report.messages, report.messages)
    report.left_out = left_out(store.backend)
    return report


def left_out(backend: Backend) -> list[tuple[str, int]]:
    """The tables of the database that an export does not hold and that hold rows (the
    adapters' own, or anyone's sharing the database): (name, rows)."""
    own = {t.name for t in CORE.tables} | {SCHEMA_TABLE, sql.MIGRATING}

    def read(tx: Tx) -> list[tuple[str, int]]:
        names = [
            n
            for n in sql.table_names(tx, backend.dialect)
            if n not in own and not CORE.derives(n)  # the search index: made, not copied
        ]
        counted = [(n, sql.count_rows(tx, n)) for n in names]
        return [(n, rows) for n, rows in counted if rows]

    return backend.read(read)
