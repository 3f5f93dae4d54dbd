"""Moving a store's data: export to and import from the JSON Lines format, and ``migrate``
from one database to another. The ``convostore`` command is a thin layer over these.

The export format (``convostore-export``, version 1) is described in the core README: a header
line, then each conversation followed by its messages in ``seq`` order, then an end line with
the counts and the SHA-256 of every byte before it. Everything is streamed: the memory used
does not grow with the size of the store or of the file.
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
from .components import SCHEMA_TABLE, Component, Table, registered_components
from .errors import (
    ConflictError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
)
from .ids import now_ms
from .models import ROLES, ChangeKind
from .store import ConversationStore
from .validation import (
    Limits,
    check_id,
    check_int,
    check_optional_id,
    check_optional_int,
    check_role,
    encode_content,
    encode_metadata,
)

FORMAT = "convostore-export"
VERSION = 1
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


class _Merged:
    """The rows of a stream ordered by conversation id, handed out one conversation at a
    time, conversations in the same order (rows of a conversation not asked for are
    skipped: orphans, which ``convostore check`` reports)."""

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


def export_jsonl(
    store: ConversationStore,
    out: IO[bytes],
    *,
    user_id: str | None = None,
    conversation_ids: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    """Write every conversation (or ``user_id``'s, or those named) with its messages to
    ``out``, from one consistent snapshot of the database, a line at a time."""
    limits = store.limits
    uid = check_optional_id("user_id", user_id, limits)
    ids = (
        None
        if conversation_ids is None
        else [check_id("conversation_ids[]", c, limits) for c in conversation_ids]
    )
    lines = _Lines(out)
    emit = lines.emit
    report = ExportReport()

    def tick() -> None:
        if progress is not None and report.messages % BATCH_ROWS == 0:
            progress("messages", report.messages, 0)

    def conversation(
        row: ConversationRow, messages: Iterator[MessageRow], changes: Iterator[ChangeRow]
    ) -> None:
        emit(_conversation_line(row))
        report.conversations += 1
        cid_json = _dump(row.id)
        for m in messages:
            emit(_message_line(cid_json, m))
            report.messages += 1
            tick()
        for c in changes:
            emit(_change_line(cid_json, c))

    def read(tx: Tx) -> None:
        if ids is not None:
            for cid in ids:
                row = tx.conversation(cid)
                if row is None:
                    raise MemoryValidationError(
                        f"conversation_ids: no conversation {cid!r} in this store",
                        argument="conversation_ids",
                    )
                conversation(row, sql.stream_messages(tx, cid), _changes_of(tx, cid))
        elif uid is not None:
            for row in sql.stream_conversations(tx, uid):
                conversation(row, sql.stream_messages(tx, row.id), _changes_of(tx, row.id))
        else:
            # one pass over each table's primary key, merged: (conversation id, seq) order
            messages = _Merged(sql.stream_all_messages(tx))
            changes = _Merged(sql.stream_changes(tx))
            for row in sql.stream_conversations(tx):
                conversation(row, messages.of(row.id), changes.of(row.id))
            messages.drain()
            changes.drain()

    header = {"format": FORMAT, "version": VERSION, "exported_at": now_ms()}
    emit(_dump(header))
    store.backend.read(read)
    lines.flush()
    end = {
        "type": "end",
        "conversations": report.conversations,
        "messages": report.messages,
        "sha256": lines.digest.hexdigest(),
    }
    out.write(_dump(end).encode() + b"\n")
    out.flush()
    return report


# -- import ----------------------------------------------------------------------------------


@dataclass
class ImportReport:
    conversations: int = 0
    messages: int = 0  # messages added (those already stored are not counted)


def _bad(path: str, line: int, why: str) -> MemoryValidationError:
    return MemoryValidationError(f"{path}, line {line}: {why}", argument="file")


def _header(path: str, first: bytes) -> None:
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _bad(path, 1, f"not a convostore export (its first line is not a {FORMAT} header)")
    version = header.get("version")
    if version != VERSION:
        raise _bad(path, 1, f"export format version {version!r}; this convostore reads {VERSION}")


def verify_export(path: str) -> tuple[int, int]:
    """Check a file is a whole export (header, end line, checksum) before anything is read
    from it into a store; return its (conversations, messages)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            first = f.readline()
            _header(path, first)
            previous, number = first, 1
            for line in f:
                digest.update(previous)
                previous, number = line, number + 1
    except OSError as exc:
        raise MemoryValidationError(f"file {path!r}: {exc.strerror}", argument="file") from None
    try:
        end = json.loads(previous) if previous.endswith(b"\n") and number > 1 else None
    except ValueError:
        end = None
    if not isinstance(end, dict) or end.get("type") != "end":
        raise _bad(path, number, "the export is truncated (its last line is not the end line)")
    if end.get("sha256") != digest.hexdigest():
        raise _bad(path, number, "the export is damaged (its checksum does not match)")
    return int(end.get("conversations", 0)), int(end.get("messages", 0))


_CONV_KEYS = {
    "type",
    "id",
    "user_id",
    "created_at",
    "last_message_at",
    "message_count",
    "next_seq",
    "metadata",
}
_MSG_KEYS = {
    "type",
    "conversation_id",
    "seq",
    "id",
    "role",
    "content",
    "metadata",
    "created_at",
    "updated_at",
}


_CHANGE_KEYS = {"type", "conversation_id", "seq", "kind", "message_id", "created_at"}
_CHANGE_KINDS = get_args(ChangeKind)


def _fields(record: dict[str, Any], keys: set[str]) -> None:
    if set(record) != keys:
        missing, extra = sorted(keys - set(record)), sorted(set(record) - keys)
        raise MemoryValidationError(f"fields missing {missing}, unknown {extra}")


def _conversation_record(record: dict[str, Any], limits: Limits) -> ConversationRow:
    _fields(record, _CONV_KEYS)
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


def _message_record(record: dict[str, Any], conv: ConversationRow, limits: Limits) -> MessageRow:
    _fields(record, _MSG_KEYS)
    if record["conversation_id"] != conv.id:
        raise MemoryValidationError(
            f"a message of {record['conversation_id']!r} among those of {conv.id!r}"
        )
    return MessageRow(
        seq=check_int("seq", record["seq"], minimum=1, maximum=conv.next_seq - 1),
        id=check_id("id", record["id"], limits),
        role=check_role(record["role"]),
        content=encode_content(record["content"], limits),
        metadata=encode_metadata(record["metadata"], limits),
        created_at=check_int("created_at", record["created_at"]),
        updated_at=check_optional_int("updated_at", record["updated_at"]),
    )


def _change_record(record: dict[str, Any], conv: ConversationRow, limits: Limits) -> ChangeRow:
    _fields(record, _CHANGE_KEYS)
    if record["conversation_id"] != conv.id:
        raise MemoryValidationError(
            f"a change of {record['conversation_id']!r} among those of {conv.id!r}"
        )
    if record["kind"] not in _CHANGE_KINDS:
        raise MemoryValidationError(f"kind must be one of {', '.join(_CHANGE_KINDS)}")
    return ChangeRow(
        seq=check_int("seq", record["seq"], minimum=1, maximum=conv.next_seq - 1),
        kind=record["kind"],
        message_id=check_optional_id("message_id", record["message_id"], limits),
        created_at=check_int("created_at", record["created_at"]),
    )


Part = tuple[ConversationRow, Sequence[MessageRow], bool, Sequence[ChangeRow]]
"""Some messages of a conversation, in ``seq`` order, whether they are its last ones, and
(with the last ones) its change rows."""


def restore(store: ConversationStore, parts: Sequence[Part]) -> int:
    """Write conversations and their messages exactly as they were stored (ids, seqs, times,
    metadata, owner), in one transaction; a part marked last also sets its conversation's
    metadata and last activity. Messages already stored at their seq are skipped (so a second
    import changes nothing); a different one there, a message id stored at another seq, or a
    conversation of another owner or creation time is a ``ConflictError`` and nothing is
    written. Return how many messages were added."""
    limits = store.limits
    return store.backend.write(lambda tx: sum(_restore(tx, limits, *part) for part in parts))


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


def _restore(  # noqa: PLR0917 - a Part, unpacked
    tx: Tx,
    limits: Limits,
    conversation: ConversationRow,
    messages: Sequence[MessageRow],
    final: bool,
    changes: Sequence[ChangeRow],
) -> int:
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


_decode = json.JSONDecoder().raw_decode


def _parse(line: bytes) -> Any:
    """One line's JSON value (``json.loads`` without its per-call detours)."""
    text = line.decode()
    value, end = _decode(text)
    if text[end:].strip():
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


class _Importer:
    """The state of one import: the conversation being read, and what is read but not yet
    written (several conversations go into one transaction)."""

    def __init__(self, store: ConversationStore, total: int, progress: Progress | None) -> None:
        self.store, self.total, self.progress = store, total, progress
        self.report = ImportReport()
        self.conv: ConversationRow | None = None
        self.chunk: list[MessageRow] = []
        self.changes: list[ChangeRow] = []
        self.ids: set[str] = set()
        self.parts: list[Part] = []
        self.size = self.rows = self.seen = self.in_conv = self.last_seq = 0

    def line(self, record: Any) -> bool:
        """Take one parsed line; False at the end line."""
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "end":
            return False
        if kind == "conversation":
            self.finish()
            self.conv = _conversation_record(record, self.store.limits)
            self.last_seq = self.in_conv = 0
        elif kind == "change":
            if self.conv is None:
                raise MemoryValidationError("a change before any conversation")
            c = _change_record(record, self.conv, self.store.limits)
            if self.changes and c.seq <= self.changes[-1].seq:
                raise MemoryValidationError(f"seq {c.seq} does not follow {self.changes[-1].seq}")
            self.changes.append(c)
        elif kind == "message":
            if self.conv is None:
                raise MemoryValidationError("a message before any conversation")
            if self.changes:
                raise MemoryValidationError("a message after its conversation's changes")
            m = _message_record(record, self.conv, self.store.limits)
            if m.seq <= self.last_seq:
                raise MemoryValidationError(f"seq {m.seq} does not follow {self.last_seq}")
            if m.id in self.ids:
                raise MemoryValidationError(f"message id {m.id!r} appears twice")
            self.ids.add(m.id)
            self.last_seq = m.seq
            self.in_conv += 1
            self.seen += 1
            self.chunk.append(m)
            self.rows += 1
            self.size += len(m.content) + len(m.metadata or "")
            if self.rows >= BATCH_ROWS or self.size >= BATCH_BYTES:
                self.parts.append((self.conv, self.chunk, False, []))
                self.chunk = []
                self.flush()
        else:
            raise MemoryValidationError(f"unknown line type {kind!r}")
        return True

    def finish(self) -> None:
        """End the conversation being read, once its count is checked."""
        conv = self.conv
        if conv is None:
            return
        if self.in_conv != conv.message_count:
            raise MemoryValidationError(
                f"conversation {conv.id!r} announced {conv.message_count} messages and holds"
                f" {self.in_conv}"
            )
        self.parts.append((conv, self.chunk, True, self.changes))
        self.report.conversations += 1
        self.conv, self.chunk, self.ids, self.changes = None, [], set(), []
        self.rows += 1
        if self.rows >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        """Write what is read, in one transaction."""
        if self.parts:
            self.report.messages += restore(self.store, self.parts)
        self.parts, self.size, self.rows = [], 0, 0
        if self.progress is not None:
            self.progress("messages", self.seen, self.total)


def import_jsonl(
    store: ConversationStore, path: str, *, progress: Progress | None = None
) -> ImportReport:
    """Import an export file: checked whole first (header, end line, checksum), then each
    line validated like any input and written in batches through ``restore``. Importing the
    same file twice changes nothing."""
    _, total = verify_export(path)
    state = _Importer(store, total, progress)
    number = 1
    with open(path, "rb") as f:
        f.readline()  # the header, checked above
        try:
            for number, line in enumerate(f, start=2):  # noqa: B007 - named in errors
                if not state.line(_parse(line)):
                    break
            state.finish()
            state.flush()
        except (ValueError, RecursionError) as exc:  # MemoryValidationError is one
            raise _bad(path, number, str(exc)) from None
    return state.report


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
    """The registered components whose tables ``backend``'s database holds."""
    versions = backend.read(sql.schema_versions)
    known = {c.name: c for c in registered_components()}
    unknown = sorted(set(versions) - set(known))
    if unknown:
        raise MemoryValidationError(
            f"the source holds tables of {', '.join(map(repr, unknown))}, which no installed"
            " package registers (install the adapter that wrote them)",
            argument="source",
        )
    for name, version in versions.items():
        if version > known[name].version:
            raise MemoryValidationError(
                f"the source's {name!r} tables are at schema version {version}; the installed"
                f" {known[name].package or name} knows {known[name].version}: upgrade it",
                argument="source",
            )
    return [c for c in registered_components() if c.name in versions]


def uncovered_tables(backend: Backend) -> list[str]:
    """Tables of the database that no registered component describes (nor the registry's
    own, nor a migration's marker)."""
    covered = {t.name for c in registered_components() for t in c.tables}
    covered |= {SCHEMA_TABLE, sql.MIGRATING}
    names = backend.read(lambda tx: sql.table_names(tx, backend.dialect))
    return [n for n in names if n not in covered]


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
        columns = src.read(
            functools.partial(sql.table_columns, dialect=src.dialect, table=table.name)
        )
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
    rows: int
    bytes: int | None  # on disk with its indexes; None where the database cannot tell


def stats(store: ConversationStore) -> list[Stat]:
    """Rows and bytes of every registered component's tables the database holds, and the
    conversations an adapter keeps under its id prefix (``Component.conversation_kinds``)."""
    backend = store.backend
    present = set(backend.read(lambda tx: sql.table_names(tx, backend.dialect)))
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
    return result
