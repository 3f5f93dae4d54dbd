"""Moving a store's data: export to and import from the JSON Lines format, and ``migrate``
from one database to another. The ``convostore`` command is a thin layer over these.

The export format (``convostore-export``, version 2; version 1 is read too) is described in the
core README: a header line, then each conversation followed by its messages in ``seq`` order and
its change rows, then each memory store followed by its versions and its live entries, then an
end line with the counts and the SHA-256 of every byte before it. Everything is streamed: the
memory used does not grow with the size of the store or of the file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, get_args
from urllib.parse import urlsplit

from .backends import (
    DEFAULT_URL,
    Backend,
    ChangeRow,
    ConversationRow,
    MessageRow,
    Tx,
    _sqlite_path,
)
from .backends import transfer as sql
from .backends.keys import prefix_upper
from .backends.memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from .components import (
    CORE,
    SCHEMA_TABLE,
    Component,
    Table,
    components_named,
    install_hint,
    registered_components,
)
from .errors import (
    ConflictError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    StorageError,
)
from .ids import now_ms
from .memory_stores import _version_seq
from .models import ROLES, ChangeKind, MemoryOperation
from .search import reindex
from .store import ConversationStore
from .validation import (
    Limits,
    check_id,
    check_int,
    check_memory_content,
    check_memory_path,
    check_optional_id,
    check_optional_int,
    check_optional_text,
    check_role,
    decode_json,
    encode_content,
    encode_metadata,
    preview,
)

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


class _Merged:
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
        return {key: getattr(self, key) for key in _COUNTED}


_COUNTED = ("conversations", "messages", "memory_stores", "memory_versions", "memory_entries")
"""The counts of an export's end line (version 2; version 1 counts the first two)."""


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
        messages = _Merged(sql.stream_all_messages(tx))
        changes = _Merged(sql.stream_changes(tx))
        for row in sql.stream_conversations(tx):
            self.conversation(row, messages.of(row.id), changes.of(row.id))
        messages.drain()
        changes.drain()
        versions = _Merged(sql.stream_memory_versions(tx))
        entries = _Merged(sql.stream_memory_entries(tx))
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


# -- import: the records of an export, each validated like any input -------------------------


@dataclass
class ImportReport:
    conversations: int = 0
    messages: int = 0  # messages added (those already stored are not counted)
    memory_stores: int = 0
    memory_versions: int = 0  # versions added
    line: int = 1  # the last line written (the header, until something is)

    def written(self) -> str:
        """What is imported, in words."""
        return (
            f"{self.conversations} conversations ({self.messages} new messages) and"
            f" {self.memory_stores} memory stores ({self.memory_versions} new versions)"
        )


def _bad(path: str, line: int, why: str) -> MemoryValidationError:
    return MemoryValidationError(f"{path}, line {line}: {why}", argument="file")


_KEYS: dict[str, set[str]] = {
    kind: {"type", *names.split()}
    for kind, names in {
        "conversation": "id user_id created_at last_message_at message_count next_seq metadata",
        "message": "conversation_id seq id role content metadata created_at updated_at",
        "change": "conversation_id seq kind message_id created_at",
        "memory_store": "id user_id name description metadata created_at updated_at"
        " entry_count total_size next_seq",
        "memory_version": "store_id seq id entry_id version operation path size created_at"
        " redacted_at content",
        "memory_entry": "store_id path id version version_seq size created_at updated_at",
    }.items()
}
"""The fields of each type of record (the README's format)."""
_END_KEYS = {
    1: {"type", "conversations", "messages", "sha256"},
    2: {"type", *_COUNTED, "sha256"},
}
_CHANGE_KINDS = get_args(ChangeKind)
_OPERATIONS = get_args(MemoryOperation)


def _fields(record: dict[str, Any], keys: set[str]) -> None:
    if set(record) != keys:
        missing, extra = sorted(keys - set(record)), sorted(set(record) - keys)
        raise MemoryValidationError(f"fields missing {missing}, unknown {extra}")


def _conversation_record(record: dict[str, Any], limits: Limits) -> ConversationRow:
    _fields(record, _KEYS["conversation"])
    return ConversationRow(
        id=check_id("id", record["id"], limits),
        user_id=check_optional_id("user_id", record["user_id"], limits),
        created_at=check_int("created_at", record["created_at"]),
        last_message_at=check_int("last_message_at", record["last_message_at"]),
        message_count=check_int(
            "message_count",
            record["message_count"],
            maximum=limits.max_messages_per_conversation,
        ),
        next_seq=check_int("next_seq", record["next_seq"], minimum=1),
        metadata=encode_metadata(record["metadata"], limits),
    )


def _seq(record: dict[str, Any], next_seq: int) -> int:
    """A row's ``seq``: below its parent's ``next_seq`` (which numbers the next one)."""
    seq = check_int("seq", record["seq"], minimum=1)
    if seq >= next_seq:
        raise MemoryValidationError(f"next_seq is {next_seq} but it holds seq {seq}")
    return seq


def _message_record(record: dict[str, Any], conv: ConversationRow, limits: Limits) -> MessageRow:
    _fields(record, _KEYS["message"])
    if record["conversation_id"] != conv.id:
        raise MemoryValidationError(
            f"a message of {record['conversation_id']!r} among those of {conv.id!r}"
        )
    return MessageRow(
        seq=_seq(record, conv.next_seq),
        id=check_id("id", record["id"], limits),
        role=check_role(record["role"]),
        content=encode_content(record["content"], limits),
        metadata=encode_metadata(record["metadata"], limits),
        created_at=check_int("created_at", record["created_at"]),
        updated_at=check_optional_int("updated_at", record["updated_at"]),
    )


def _change_record(record: dict[str, Any], conv: ConversationRow, limits: Limits) -> ChangeRow:
    _fields(record, _KEYS["change"])
    if record["conversation_id"] != conv.id:
        raise MemoryValidationError(
            f"a change of {record['conversation_id']!r} among those of {conv.id!r}"
        )
    if record["kind"] not in _CHANGE_KINDS:
        raise MemoryValidationError(f"kind must be one of {', '.join(_CHANGE_KINDS)}")
    return ChangeRow(
        seq=_seq(record, conv.next_seq),
        kind=record["kind"],
        message_id=check_optional_id("message_id", record["message_id"], limits),
        created_at=check_int("created_at", record["created_at"]),
    )


def _memory_store_record(record: dict[str, Any], limits: Limits) -> MemoryStoreRow:
    _fields(record, _KEYS["memory_store"])
    return MemoryStoreRow(
        id=check_id("id", record["id"], limits),
        user_id=check_optional_id("user_id", record["user_id"], limits),
        name=check_id("name", record["name"], limits),
        description=check_optional_text(
            "description", record["description"], limits.max_description_bytes
        ),
        metadata=encode_metadata(record["metadata"], limits),
        created_at=check_int("created_at", record["created_at"]),
        updated_at=check_int("updated_at", record["updated_at"]),
        entry_count=check_int(
            "entry_count", record["entry_count"], maximum=limits.max_memory_entries_per_store
        ),
        total_size=check_int("total_size", record["total_size"]),
        next_seq=check_int("next_seq", record["next_seq"], minimum=1),
    )


def _memory_path(record: dict[str, Any], limits: Limits) -> str:
    """A path as the store's rule takes it, and already in the form the rule keeps."""
    path = check_memory_path(record["path"], limits)
    if path != record["path"]:
        raise MemoryValidationError(f"path {record['path']!r} is not in its stored form")
    return path


def _memory_version_record(
    record: dict[str, Any], store: MemoryStoreRow, limits: Limits
) -> MemoryVersionRow:
    _fields(record, _KEYS["memory_version"])
    if record["store_id"] != store.id:
        raise MemoryValidationError(
            f"a version of memory store {record['store_id']!r} among those of {store.id!r}"
        )
    seq = _seq(record, store.next_seq)
    vid = check_id("id", record["id"], limits)
    if _version_seq(vid) != seq:
        raise MemoryValidationError(
            f"id {vid!r} is not a version id of seq {seq} (memver_, then 32 hex digits ending"
            " with the seq)"
        )
    operation = record["operation"]
    if operation not in _OPERATIONS:
        raise MemoryValidationError(f"operation must be one of {', '.join(_OPERATIONS)}")
    redacted_at = check_optional_int("redacted_at", record["redacted_at"])
    content = record["content"]
    data = None if content is None else check_memory_content(content, limits)
    size = check_int("size", record["size"], maximum=limits.max_memory_content_bytes)
    if data is None and redacted_at is None and operation != "delete":
        raise MemoryValidationError(
            "content is null, but the version is neither redacted nor a delete"
        )
    if data is not None and (redacted_at is not None or operation == "delete"):
        raise MemoryValidationError("content must be null in a redacted version or a delete")
    if data is not None and len(data) != size:
        raise MemoryValidationError(f"size is {size} but the content holds {len(data)} bytes")
    if operation == "delete" and size:
        raise MemoryValidationError(f"size is {size} in a delete, which holds no content")
    return MemoryVersionRow(
        store_id=store.id,
        seq=seq,
        id=vid,
        entry_id=check_id("entry_id", record["entry_id"], limits),
        version=check_int("version", record["version"], minimum=1),
        operation=operation,
        path=_memory_path(record, limits),
        size=size,
        created_at=check_int("created_at", record["created_at"]),
        redacted_at=redacted_at,
        content=data,
    )


def _memory_entry_record(
    record: dict[str, Any], store: MemoryStoreRow, limits: Limits
) -> MemoryEntryRow:
    _fields(record, _KEYS["memory_entry"])
    if record["store_id"] != store.id:
        raise MemoryValidationError(
            f"an entry of memory store {record['store_id']!r} among those of {store.id!r}"
        )
    return MemoryEntryRow(
        store_id=store.id,
        path=_memory_path(record, limits),
        id=check_id("id", record["id"], limits),
        version=check_int("version", record["version"], minimum=1),
        version_seq=check_int("version_seq", record["version_seq"], minimum=1),
        size=check_int("size", record["size"], maximum=limits.max_memory_content_bytes),
        created_at=check_int("created_at", record["created_at"]),
        updated_at=check_int("updated_at", record["updated_at"]),
    )


@dataclass
class _History:
    """An entry as its versions so far leave it."""

    version: int
    seq: int
    size: int
    path: str
    deleted: bool
    listed: bool = False


HEADS = ("conversation", "memory_store")
"""The records that start a unit: a conversation with its messages and changes, a memory
store with its versions and entries (an import writes each unit in one transaction)."""


class Checker:
    """The rules of an export's records, one record at a time, in order: each conversation
    followed by its messages (``seq`` rising, ids unique, as many as it counts) and then its
    change rows; each memory store followed by its versions (``seq`` rising, each entry's
    numbered from 1 and starting with its create, nothing after its delete) and then its live
    entries (by path, each one its entry's last version, as many and as large as the store
    counts). ``import`` runs it on each line of a file; ``convostore check`` on each row of
    a database. A broken rule is a ``MemoryValidationError``."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.totals = dict.fromkeys(_COUNTED, 0)
        self._start()

    def _start(self) -> None:
        self.conv: ConversationRow | None = None
        self.store: MemoryStoreRow | None = None
        self.count = self.last_seq = self.last_change = self.entry_size = 0
        self.ids: set[str] = set()
        self.changes = self.entries = False
        self.history: dict[str, _History] = {}
        self.last_path = ""

    def copy(self) -> Checker:
        """A checker between units with the same totals (to read the same records again)."""
        if self.conv is not None or self.store is not None:
            raise RuntimeError("Checker.copy() in the middle of a unit")
        twin = Checker(self.limits)
        twin.totals = dict(self.totals)
        return twin

    def take(self, record: Any) -> tuple[str, Any]:
        """Check one record; (its type, the row it stands for)."""
        kind = record.get("type") if isinstance(record, dict) else None
        limits = self.limits
        if kind == "conversation":
            self.close()
            self.conv = _conversation_record(record, limits)
            self.totals["conversations"] += 1
            return kind, self.conv
        if kind == "message":
            conv = self._in(self.conv, "a message")
            if self.changes:
                raise MemoryValidationError("a message after its conversation's changes")
            m = _message_record(record, conv, limits)
            if m.seq <= self.last_seq:
                raise MemoryValidationError(f"seq {m.seq} does not follow {self.last_seq}")
            if m.id in self.ids:
                raise MemoryValidationError(f"message id {m.id!r} appears twice")
            self.ids.add(m.id)
            self.last_seq = m.seq
            self.count += 1
            self.totals["messages"] += 1
            return kind, m
        if kind == "change":
            conv = self._in(self.conv, "a change")
            c = _change_record(record, conv, limits)
            if self.changes and c.seq <= self.last_change:
                raise MemoryValidationError(f"seq {c.seq} does not follow {self.last_change}")
            self.changes, self.last_change = True, c.seq
            return kind, c
        if kind == "memory_store":
            self.close()
            self.store = _memory_store_record(record, limits)
            self.totals["memory_stores"] += 1
            return kind, self.store
        if kind == "memory_version":
            store = self._in(self.store, "a memory version")
            if self.entries:
                raise MemoryValidationError("a memory version after its store's entries")
            v = _memory_version_record(record, store, limits)
            self._version(v)
            self.totals["memory_versions"] += 1
            return kind, v
        if kind == "memory_entry":
            store = self._in(self.store, "a memory entry")
            e = _memory_entry_record(record, store, limits)
            self._entry(e)
            self.totals["memory_entries"] += 1
            return kind, e
        if kind == "end":
            raise MemoryValidationError("an end line before the end of the file")
        raise MemoryValidationError(f"unknown line type {preview(str(kind))}")

    @staticmethod
    def _in(parent: Any, what: str) -> Any:
        if parent is None:
            raise MemoryValidationError(f"{what} outside the unit it belongs to")
        return parent

    def _version(self, v: MemoryVersionRow) -> None:
        if v.seq <= self.last_seq:
            raise MemoryValidationError(f"seq {v.seq} does not follow {self.last_seq}")
        self.last_seq = v.seq
        was = self.history.get(v.entry_id)
        if was is None:
            if (v.version, v.operation) != (1, "create"):
                raise MemoryValidationError(
                    f"entry {v.entry_id!r} starts with version {v.version}, a {v.operation};"
                    " an entry starts with version 1, its create"
                )
        elif was.deleted:
            raise MemoryValidationError(f"entry {v.entry_id!r}: a version after its delete")
        elif v.version != was.version + 1 or v.operation == "create":
            raise MemoryValidationError(
                f"entry {v.entry_id!r}: version {v.version}, a {v.operation}, does not follow"
                f" version {was.version}"
            )
        size = 0 if v.operation == "delete" else v.size
        self.history[v.entry_id] = _History(v.version, v.seq, size, v.path, v.operation == "delete")

    def _entry(self, e: MemoryEntryRow) -> None:
        if self.entries and e.path <= self.last_path:
            raise MemoryValidationError(f"path {e.path!r} does not follow {self.last_path!r}")
        self.entries, self.last_path = True, e.path
        last = self.history.get(e.id)
        if last is None or last.deleted or last.listed:
            raise MemoryValidationError(f"entry {e.id!r} is not a live entry of its versions")
        if (e.version, e.version_seq, e.size, e.path) != (
            last.version,
            last.seq,
            last.size,
            last.path,
        ):
            raise MemoryValidationError(
                f"entry {e.id!r} is not its last version (version {last.version}, seq"
                f" {last.seq}, {last.size} bytes at {last.path!r})"
            )
        last.listed = True
        self.count += 1
        self.entry_size += e.size

    def close(self) -> None:
        """End the unit being read, once its counts are checked."""
        conv, store = self.conv, self.store
        if conv is not None and self.count != conv.message_count:
            raise MemoryValidationError(
                f"conversation {conv.id!r}: message_count is {conv.message_count} but it holds"
                f" {self.count} messages"
            )
        if store is not None:
            unlisted = [eid for eid, h in self.history.items() if not h.deleted and not h.listed]
            if unlisted:
                raise MemoryValidationError(
                    f"memory store {store.id!r}: entry {unlisted[0]!r} is live in its versions"
                    " but not among its entries"
                )
            if (self.count, self.entry_size) != (store.entry_count, store.total_size):
                raise MemoryValidationError(
                    f"memory store {store.id!r}: entry_count is {store.entry_count} and"
                    f" total_size {store.total_size}, but it holds {self.count} entries of"
                    f" {self.entry_size} bytes"
                )
        self._start()

    def abandon(self) -> None:
        """Leave the unit being read unchecked (``check`` goes on with the next)."""
        self._start()


def _end_record(record: Any, version: int) -> dict[str, int]:
    """The counts of an end line."""
    if not isinstance(record, dict) or record.get("type") != "end":
        raise MemoryValidationError("the export is truncated (its last line is not the end line)")
    _fields(record, _END_KEYS[version])
    return {k: check_int(k, v) for k, v in record.items() if k not in ("type", "sha256")}


_decode = json.JSONDecoder().raw_decode


def _parse(line: bytes) -> Any:
    """One line's JSON value (``json.loads`` without its per-call detours)."""
    text = line.decode()
    value, end = _decode(text)
    if text[end:].strip():
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def _header(path: str, first: bytes) -> int:
    """The format version of an export's first line."""
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _bad(path, 1, f"not a convostore export (its first line is not a {FORMAT} header)")
    version = header.get("version")
    if version not in READS or isinstance(version, bool):
        raise _bad(
            path,
            1,
            f"export format version {json.dumps(version)[:40]}; this convostore reads versions"
            f" {', '.join(map(str, READS))}",
        )
    return int(version)


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise MemoryValidationError(f"file {path!r}: {exc.strerror}", argument="file") from None


def verify_export(path: str, limits: Limits | None = None) -> dict[str, int]:
    """Read a whole export before anything of it is written: its header, its end line and
    checksum (a truncated, damaged or foreign file is refused), then every record, validated
    like any input and in order (``Checker``), and the counts of the end line. Return those
    counts; raise ``MemoryValidationError`` naming the file, the line and the rule."""
    with _open(path) as f:
        return _verify(f, path, limits or Limits(), None)


def _verify(f: IO[bytes], path: str, limits: Limits, progress: Progress | None) -> dict[str, int]:
    try:
        return _read_whole(f, path, limits, progress)
    except OSError as exc:
        raise MemoryValidationError(f"file {path!r}: {exc.strerror}", argument="file") from None


def _read_whole(
    f: IO[bytes], path: str, limits: Limits, progress: Progress | None
) -> dict[str, int]:
    size = os.fstat(f.fileno()).st_size
    digest = hashlib.sha256()
    checker = Checker(limits)
    first = f.readline()
    version = _header(path, first)
    broken: MemoryValidationError | None = None
    previous, number, done = first, 1, len(first)
    for line in f:
        digest.update(previous)
        if number > 1 and broken is None:
            try:
                checker.take(_parse(previous))
            except (ValueError, RecursionError) as exc:  # MemoryValidationError is one
                broken = _bad(path, number, str(exc))
        previous, number = line, number + 1
        done += len(line)
        if progress is not None and number % BATCH_ROWS == 0:
            progress("bytes checked", done, size)
    try:
        end = _parse(previous) if previous.endswith(b"\n") and number > 1 else None
    except (ValueError, RecursionError):
        end = None
    if not isinstance(end, dict) or end.get("type") != "end":
        raise _bad(path, number, "the export is truncated (its last line is not the end line)")
    if end.get("sha256") != digest.hexdigest():
        raise _bad(path, number, "the export is damaged (its checksum does not match)")
    if broken is not None:
        raise broken
    try:
        checker.close()
        counts = _end_record(end, version)
    except (ValueError, RecursionError) as exc:
        raise _bad(path, number, str(exc)) from None
    for key, count in counts.items():
        if checker.totals[key] != count:
            raise _bad(
                path,
                number,
                f"the end line counts {count} {key.replace('_', ' ')}; the file holds"
                f" {checker.totals[key]}",
            )
    if progress is not None:
        progress("bytes checked", size, size)
    return counts


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
            record = _parse(line)
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
            raise _bad(path, number, str(exc)) from None
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
    with _open(path) as f:
        totals = _verify(f, path, limits, progress)
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


# -- migrate ---------------------------------------------------------------------------------


@dataclass
class TableReport:
    component: str
    table: str
    rows: int  # rows in the source (and, verified, in the destination)
    copied: int  # rows this run copied (fewer when it continued an interrupted one)
    sha256: str = ""


@dataclass
class MigrateReport:
    tables: list[TableReport] = field(default_factory=list)
    resumed: bool = False
    not_copied: list[str] = field(default_factory=list)  # tables no component describes
    indexed: int = 0  # messages the destination's search index took in


def _row_digest(row: tuple[Any, ...]) -> bytes:
    """A row as hashed: the same bytes for the same values from either database."""
    return repr(row).encode("utf-8", "surrogatepass")


def digest_table(backend: Backend, table: Table, columns: Sequence[str]) -> tuple[int, str]:
    """The row count of ``table`` and a SHA-256 over its rows in key order, comparable
    between SQLite and PostgreSQL (both hand the same Python values back)."""

    def read(tx: Tx) -> tuple[int, str]:
        h, n = hashlib.sha256(), 0
        for row in sql.rows_in_key_order(tx, table.name, columns, table.key, None):
            h.update(_row_digest(row))
            n += 1
        return n, h.hexdigest()

    return backend.read(read)


def _components_of(backend: Backend) -> list[Component]:
    """The registered components whose tables ``backend``'s database holds (only their
    modules are imported: an adapter's import brings its framework, which takes seconds)."""
    versions = backend.read(sql.schema_versions)
    known, missing = components_named(versions)
    if missing:
        raise MemoryValidationError(
            f"the source holds tables of {', '.join(map(repr, missing))}, which no installed"
            f" package registers ({'; '.join(install_hint(name) for name in missing)})",
            argument="source",
        )
    for component in known:
        if versions[component.name] > component.version:
            raise MemoryValidationError(
                f"the source's {component.name!r} tables are at schema version"
                f" {versions[component.name]}; the installed"
                f" {component.package or component.name} knows {component.version}: upgrade it",
                argument="source",
            )
    return known


def uncovered_tables(backend: Backend) -> list[str]:
    """Tables of the database that no component it holds describes (nor the registry's own,
    nor a migration's marker)."""
    held, _ = components_named(backend.read(sql.schema_versions))
    covered = {t.name for c in held for t in c.tables}
    covered |= {SCHEMA_TABLE, sql.MIGRATING}
    names = backend.read(lambda tx: sql.table_names(tx, backend.dialect))
    return [n for n in names if n not in covered and not any(c.derives(n) for c in held)]


def migrate(
    source: str,
    destination: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
    batch_rows: int = BATCH_ROWS,
) -> MigrateReport:
    """Copy every component's tables from ``source`` to ``destination`` (created and
    migrated first), a batch per transaction, then compare each table's row count and
    checksum. Interrupted, it continues where it stopped when run again: the destination
    remembers that a copy from ``source`` is under way, and each table resumes after its
    greatest key. A destination that holds data of its own is refused unless ``force``,
    which empties the copied tables first. ``batch_rows``: rows per destination transaction
    (a batch also ends at 16 MB)."""
    batch_rows = check_int("batch_rows", batch_rows, minimum=1)
    if resolve_url(source) == resolve_url(destination):
        raise MemoryValidationError("source and destination are the same database")
    src = open_existing(source, argument="source")
    try:
        dst = ConversationStore(destination)
        try:
            return _migrate(
                src.backend,
                dst.backend,
                redact(src.url),
                force=force,
                progress=progress,
                batch_rows=batch_rows,
            )
        finally:
            dst.close()
    finally:
        src.close()


def _migrate(
    src: Backend,
    dst: Backend,
    source: str,
    *,
    force: bool,
    progress: Progress | None,
    batch_rows: int,
) -> MigrateReport:
    components = _components_of(src)
    for component in components:
        src.migrate(component)  # as opening it with its adapter would
        dst.migrate(component)
    tables = [(c, t) for c in components for t in c.tables]
    report = MigrateReport(not_copied=uncovered_tables(src))

    under_way = dst.read(lambda tx: sql.migrating_source(tx, dst.dialect))
    report.resumed = under_way == source
    if not report.resumed:
        held = [
            t.name for _, t in tables if dst.read(functools.partial(sql.count_rows, table=t.name))
        ]
        if (held or under_way is not None) and not force:
            if under_way is not None:
                raise DestinationNotEmptyError(
                    f"the destination is an unfinished copy of {under_way}: run that migration"
                    " again to finish it (--force empties the destination's tables first)"
                )
            raise DestinationNotEmptyError(
                f"the destination holds data ({', '.join(held)}); migrate copies into an"
                " empty database (--force empties those tables first)"
            )

        def start(tx: Tx) -> None:
            for _, table in tables:
                sql.delete_all(tx, table.name)
            sql.start_migrating(tx, source)

        dst.write(start)

    for component, table in tables:
        columns = [
            c
            for c in src.read(
                functools.partial(sql.table_columns, dialect=src.dialect, table=table.name)
            )
            if c not in table.derived
        ]
        theirs = dst.read(
            functools.partial(sql.table_columns, dialect=dst.dialect, table=table.name)
        )
        if set(columns) - set(theirs):
            raise ConvostoreError(
                f"{table.name}: the destination lacks the columns"
                f" {sorted(set(columns) - set(theirs))}"
            )
        copied, whole = _copy_table(
            src, dst, table, columns, progress=progress, batch_rows=batch_rows
        )
        # a copy from the first row read the whole table once already: its checksum is taken
        rows, digest = whole or digest_table(src, table, columns)
        their_rows, their_digest = digest_table(dst, table, columns)
        if (rows, digest) != (their_rows, their_digest):
            raise VerificationError(
                f"{table.name}: the source holds {rows} rows, the destination {their_rows}"
                + ("" if rows != their_rows else " with other contents")
            )
        report.tables.append(TableReport(component.name, table.name, rows, copied, digest))

    report.indexed = reindex(
        dst, progress=None if progress is None else functools.partial(progress, "search index")
    )

    def finish(tx: Tx) -> None:
        for _, table in tables:
            sql.analyze(tx, dst.dialect, table.name)
        sql.end_migrating(tx)

    dst.write(finish)
    return report


def _copy_table(
    src: Backend,
    dst: Backend,
    table: Table,
    columns: Sequence[str],
    *,
    progress: Progress | None,
    batch_rows: int,
) -> tuple[int, tuple[int, str] | None]:
    """Copy the rows past the destination's greatest key; how many, and (when that was every
    row) the source's row count and checksum."""
    after = dst.read(lambda tx: sql.last_key(tx, table.name, table.key))
    done = dst.read(lambda tx: sql.count_rows(tx, table.name))
    total = src.read(lambda tx: sql.count_rows(tx, table.name))
    label = table.label or table.name
    if progress is not None:
        progress(label, done, total)

    def copy(tx: Tx) -> tuple[int, tuple[int, str] | None]:
        nonlocal done
        copied = 0
        batch: list[tuple[Any, ...]] = []
        size = 0
        h = hashlib.sha256()

        def flush() -> None:
            nonlocal done, copied, batch, size
            rows = batch
            dst.write(lambda t: t.copy_rows(table.name, columns, rows))
            done += len(rows)
            copied += len(rows)
            batch, size = [], 0
            if progress is not None:
                progress(label, done, total)

        for row in sql.rows_in_key_order(tx, table.name, columns, table.key, after):
            batch.append(row)
            data = repr(row).encode("utf-8", "surrogatepass")  # _row_digest, inlined
            h.update(data)
            size += len(data)  # the row's size, near enough
            if len(batch) >= batch_rows or size >= BATCH_BYTES:
                flush()
        if batch:
            flush()
        return copied, None if after is not None else (copied, h.hexdigest())

    return src.read(copy)


# -- stats -----------------------------------------------------------------------------------


@dataclass
class Stat:
    component: str
    what: str
    rows: int | None  # None: a component this install cannot read
    bytes: int | None  # on disk with its indexes; None where the database cannot tell


def stats(store: ConversationStore) -> list[Stat]:
    """Rows and bytes of every registered component's tables the database holds, and the
    conversations an adapter keeps under its id prefix (``Component.conversation_kinds``);
    a component whose tables the database holds but no installed package registers is a
    row saying which ``pip install`` brings it."""
    backend = store.backend
    present = set(backend.read(lambda tx: sql.table_names(tx, backend.dialect)))
    held = backend.read(sql.schema_versions)
    result: list[Stat] = []
    for component in registered_components():
        tables = [t for t in component.tables if t.name in present]
        sizes = backend.read(
            functools.partial(
                sql.table_bytes, dialect=backend.dialect, tables=[t.name for t in tables]
            )
        )
        for table in tables:
            rows = backend.read(functools.partial(sql.count_rows, table=table.name))
            size = None if sizes is None else sizes.get(table.name, 0)
            result.append(Stat(component.name, table.label or table.name, rows, size))
        for label, prefix in component.conversation_kinds.items():
            count, messages = backend.read(
                functools.partial(
                    sql.conversations_by_prefix_stats, prefix=prefix, upper=prefix_upper(prefix)
                )
            )
            result.append(Stat(component.name, label, count, None))
            result.append(Stat(component.name, f"{label}: entries", messages, None))
    _, missing = components_named(held)
    for name in missing:
        result.append(
            Stat(name, f"tables no installed package reads: {install_hint(name)}", None, None)
        )
    return result
