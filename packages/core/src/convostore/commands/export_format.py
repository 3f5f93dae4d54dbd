"""The records of an export, each validated like any input: what ``import`` and ``check`` judge
the lines (or the stored rows) by, and the whole-file check (``verify_export``)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import IO, Any, get_args

from ..backends import (
    ChangeRow,
    ConversationRow,
    MessageRow,
)
from ..backends.memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from ..errors import (
    MemoryValidationError,
)
from ..memory.stores import _version_seq
from ..models import ChangeKind, MemoryOperation
from ..validation import (
    Limits,
    check_id,
    check_int,
    check_memory_content,
    check_memory_path,
    check_optional_id,
    check_optional_int,
    check_optional_text,
    check_role,
    encode_content,
    encode_metadata,
    preview,
)
from .common import (
    BATCH_ROWS,
    COUNTED,
    FORMAT,
    READS,
    Progress,
)

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


def bad_line(path: str, line: int, why: str) -> MemoryValidationError:
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
    2: {"type", *COUNTED, "sha256"},
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
        self.totals = dict.fromkeys(COUNTED, 0)
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


def parse_line(line: bytes) -> Any:
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
        raise bad_line(
            path, 1, f"not a convostore export (its first line is not a {FORMAT} header)"
        )
    version = header.get("version")
    if version not in READS or isinstance(version, bool):
        raise bad_line(
            path,
            1,
            f"export format version {json.dumps(version)[:40]}; this convostore reads versions"
            f" {', '.join(map(str, READS))}",
        )
    return int(version)


def open_export(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise MemoryValidationError(f"file {path!r}: {exc.strerror}", argument="file") from None


def verify_export(path: str, limits: Limits | None = None) -> dict[str, int]:
    """Read a whole export before anything of it is written: its header, its end line and
    checksum (a truncated, damaged or foreign file is refused), then every record, validated
    like any input and in order (``Checker``), and the counts of the end line. Return those
    counts; raise ``MemoryValidationError`` naming the file, the line and the rule."""
    with open_export(path) as f:
        return verify_lines(f, path, limits or Limits(), None)


def verify_lines(
    f: IO[bytes], path: str, limits: Limits, progress: Progress | None
) -> dict[str, int]:
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
                checker.take(parse_line(previous))
            except (ValueError, RecursionError) as exc:  # MemoryValidationError is one
                broken = bad_line(path, number, str(exc))
        previous, number = line, number + 1
        done += len(line)
        if progress is not None and number % BATCH_ROWS == 0:
            progress("bytes checked", done, size)
    try:
        end = parse_line(previous) if previous.endswith(b"\n") and number > 1 else None
    except (ValueError, RecursionError):
        end = None
    if not isinstance(end, dict) or end.get("type") != "end":
        raise bad_line(path, number, "the export is truncated (its last line is not the end line)")
    if end.get("sha256") != digest.hexdigest():
        raise bad_line(path, number, "the export is damaged (its checksum does not match)")
    if broken is not None:
        raise broken
    try:
        checker.close()
        counts = _end_record(end, version)
    except (ValueError, RecursionError) as exc:
        raise bad_line(path, number, str(exc)) from None
    for key, count in counts.items():
        if checker.totals[key] != count:
            raise bad_line(
                path,
                number,
                f"the end line counts {count} {key.replace('_', ' ')}; the file holds"
                f" {checker.totals[key]}",
            )
    if progress is not None:
        progress("bytes checked", size, size)
    return counts
