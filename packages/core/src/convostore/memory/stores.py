"""Memory stores: versioned documents by path, with optimistic concurrency and redaction.

A memory store is a repository (per project or domain) of entries; an entry is a text
document identified by a relative path and an ``entry_id``. Every create, update and delete
writes an immutable version; an update names the version it read and is refused with
``MemoryVersionConflictError`` when the entry has moved on. A version's content can be
redacted, irreversibly. The methods here are ``ConversationStore``'s (and, awaited,
``AsyncConversationStore``'s); every rule is written once, here.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Callable
from typing import Any

from ..backends import Tx
from ..backends.memories import MemoryEntryRow, MemoryStoreRow, MemoryVersionRow
from ..engine import Engine
from ..errors import (
    ConvostoreError,
    MemoryEntryNotFoundError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryStoreNotFoundError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
    MemoryVersionConflictError,
    MemoryVersionNotFoundError,
)
from ..ids import new_ids
from ..models import (
    ListMemoriesResult,
    ListMemoryStoresResult,
    ListMemoryVersionsResult,
    MemoryEntry,
    MemoryOperation,
    MemoryStore,
    MemoryVersion,
)
from ..validation import (
    Limits,
    check_id,
    check_int,
    check_limit,
    check_memory_content,
    check_memory_path,
    check_memory_path_prefix,
    check_optional_id,
    check_optional_int,
    check_optional_text,
    check_owner,
    decode_json,
    encode_metadata,
    preview,
)

# Built with validation, which pydantic 2 does in Rust: faster than ``model_construct``
# (about 1.4 against 4 µs an entry), and every row was checked when it was written.


def _store(row: MemoryStoreRow) -> MemoryStore:
    return MemoryStore.model_validate(
        {
            "memory_store_id": row.id,
            "name": row.name,
            "description": row.description,
            "metadata": decode_json(row.metadata),
            "user_id": row.user_id,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "entry_count": row.entry_count,
            "total_size": row.total_size,
        }
    )


def _entry(row: MemoryEntryRow) -> MemoryEntry:
    return MemoryEntry.model_validate(
        {
            "entry_id": row.id,
            "memory_store_id": row.store_id,
            "path": row.path,
            "version": row.version,
            "size": row.size,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "content": None if row.content is None else row.content.decode("utf-8"),
            "redacted": row.redacted_at is not None,
        }
    )


def _version(row: MemoryVersionRow) -> MemoryVersion:
    return MemoryVersion.model_validate(
        {
            "version_id": row.id,
            "memory_store_id": row.store_id,
            "entry_id": row.entry_id,
            "version": row.version,
            "operation": row.operation,
            "path": row.path,
            "size": row.size,
            "created_at": row.created_at,
            "redacted": row.redacted_at is not None,
            "redacted_at": row.redacted_at,
            "content": None if row.content is None else row.content.decode("utf-8"),
        }
    )


_Written = tuple[MemoryVersionRow, MemoryEntryRow, MemoryStoreRow]
"""What a create or an update writes: the version, the entry, the store's row."""

_VERSION_ID = re.compile(r"memver_[0-9a-f]{20}([0-9a-f]{12})")


def _version_row(  # noqa: PLR0917 - the version's fields
    store: MemoryStoreRow,
    entry_id: str,
    version: int,
    operation: MemoryOperation,
    path: str,
    content: bytes | None,
    now: int,
) -> MemoryVersionRow:
    """The store's next version (numbered by its sequence)."""
    return MemoryVersionRow(
        store_id=store.id,
        seq=store.next_seq,
        id=_version_id(now, store.next_seq),
        entry_id=entry_id,
        version=version,
        operation=operation,
        path=path,
        size=0 if content is None else len(content),
        created_at=now,
        redacted_at=None,
        content=content,
    )


def _version_id(now: int, seq: int) -> str:
    """``memver_`` + 12 hex digits of milliseconds + 8 random + 12 of the store's sequence
    number (which finds the row by its primary key)."""
    return f"memver_{now:012x}{secrets.randbits(32):08x}{seq:012x}"


def _version_seq(version_id: str) -> int | None:
    """The sequence number in a version id; None for anything not shaped like one."""
    match = _VERSION_ID.fullmatch(version_id)
    return None if match is None else int(match.group(1), 16)


def _find_version(tx: Tx, sid: str, vid: str, *, content: bool) -> MemoryVersionRow | None:
    seq = _version_seq(vid)
    return None if seq is None else tx.memory_version(sid, seq, vid, content=content)


def path_cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode().rstrip("=")


def decode_path_cursor(cursor: object, limits: Limits) -> str:
    """The path a ``list_memories`` cursor holds; anything else is a ``MemoryValidationError``."""
    if not isinstance(cursor, str):
        raise MemoryValidationError(
            f"after must be a str, got {type(cursor).__name__}", argument="after"
        )
    if len(cursor) <= 2 * limits.max_memory_path_bytes:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            return check_memory_path(raw.decode("utf-8"), limits, "after (its path)")
        except (ValueError, binascii.Error, MemoryValidationError):
            pass
    raise MemoryValidationError(
        f"after: {preview(cursor)} is not a cursor returned by list_memories", argument="after"
    )


class MemoryStoreMethods(Engine):
    """The memory-store methods of ``ConversationStore``."""

    def _store_owned(self, row: MemoryStoreRow, user_id: str | None) -> MemoryStoreRow:
        """``row``, if ``user_id`` (when given) may use it (``check_owner``)."""
        check_owner(
            row.user_id,
            user_id,
            strict=self.strict_ownership,
            what=f"memory_store_id {row.id!r}",
            error=MemoryStoreOwnershipError,
        )
        return row

    # -- helpers ---------------------------------------------------------------------------

    def _memory_ids(self, memory_store_id: object, user_id: object) -> tuple[str, str | None]:
        limits = self.limits
        return (
            check_id("memory_store_id", memory_store_id, limits),
            check_optional_id("user_id", user_id, limits),
        )

    def _store_and_entry(
        self,
        tx: Tx,
        sid: str,
        user_id: str | None,
        *,
        entry_id: str | None = None,
        path: str | None = None,
        content: bool = False,
        lock: bool = False,
    ) -> tuple[MemoryStoreRow, MemoryEntryRow | None]:
        """The store's row (locked with ``lock``: every write to a store starts here), checked
        for ``user_id``, with its live entry of that id or at that path, in one statement."""
        if entry_id is None and path is None:
            store, entry = tx.memory_store(sid, lock=lock), None
        else:
            store, entry = tx.store_and_entry(
                sid, entry_id=entry_id, path=path, content=content, lock=lock
            )
        if store is None:
            raise MemoryStoreNotFoundError(f"memory_store_id {sid!r} not found")
        return self._store_owned(store, user_id), entry

    @staticmethod
    def _path_taken(sid: str, path: str) -> MemoryPathConflictError:
        return MemoryPathConflictError(
            f"path {path!r} is already a live entry of memory store {sid!r}"
        )

    @staticmethod
    def _not_live(sid: str, entry_id: str) -> MemoryEntryNotFoundError:
        return MemoryEntryNotFoundError(
            f"entry_id {entry_id!r} is not a live entry of memory store {sid!r}"
        )

    def _updated(
        self,
        store: MemoryStoreRow,
        entry: MemoryEntryRow,
        body: bytes,
        path: str,
        now: int,
    ) -> _Written:
        """What an update of ``entry`` to ``body`` at ``path`` writes: its version, the entry
        pointing at it, the store's row."""
        written = _version_row(store, entry.id, entry.version + 1, "update", path, body, now)
        updated = entry._replace(
            path=path,
            version=written.version,
            version_seq=written.seq,
            size=len(body),
            updated_at=max(now, entry.created_at),
            redacted_at=None,
            content=body,
        )
        saved = store._replace(
            updated_at=now,
            total_size=store.total_size - entry.size + len(body),
            next_seq=store.next_seq + 1,
        )
        return written, updated, saved

    @staticmethod
    def _ruled(rows: Callable[[], _Written]) -> _Written | None:
        """``rows()``, or None where a rule refuses them on the rows remembered (the locking
        path then judges the rows as they are, and raises). A store's owner never changes,
        so its row as remembered tells it."""
        try:
            return rows()
        except ConvostoreError:
            return None

    def _write_unchanged(
        self,
        seen: MemoryStoreRow,
        written: _Written,
        was: MemoryEntryRow | None,
    ) -> bool:
        """Write a create or an update whose rules ran on rows this store wrote last, without
        a locking read, where the database finds them unchanged (one statement on
        PostgreSQL: ``Tx.write_memory_if_unchanged``); False where it does not (nothing was
        written): the caller then takes the locking path, which raises any error from the
        rows as they are."""
        version, entry, store = written
        if self.backend.write(
            lambda tx: tx.write_memory_if_unchanged(seen, store, version, entry, was=was),
            single_statement=self.backend.conditional_append,  # PostgreSQL: one statement
        ):
            self._last_memory.remember(store, entry)
            return True
        self._last_memory.forget(entry.id)
        return False

    # -- stores ----------------------------------------------------------------------------

    def create_memory_store(
        self,
        name: str,
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> MemoryStore:
        """Create an empty memory store, owned by ``user_id`` if given."""
        limits = self.limits
        row = MemoryStoreRow(
            id="",
            user_id=check_optional_id("user_id", user_id, limits),
            name=check_id("name", name, limits),
            description=check_optional_text(
                "description", description, limits.max_description_bytes
            ),
            metadata=encode_metadata(metadata, limits),
            created_at=0,
            updated_at=0,
            entry_count=0,
            total_size=0,
            next_seq=1,
        )
        now = self.clock()
        row = row._replace(id=new_ids("memstore_", now)[0], created_at=now, updated_at=now)
        self.backend.write(lambda tx: tx.insert_memory_store(row), single_statement=True)
        return _store(row)

    def get_memory_store(
        self, memory_store_id: str, *, user_id: str | None = None
    ) -> MemoryStore | None:
        """The memory store with its ``entry_count`` and ``total_size``, or None."""
        sid, uid = self._memory_ids(memory_store_id, user_id)
        row = self.backend.read(lambda tx: tx.memory_store(sid), single_statement=True)
        return None if row is None else _store(self._store_owned(row, uid))

    def list_memory_stores(
        self, *, limit: int = 20, after: str | None = None, user_id: str | None = None
    ) -> ListMemoryStoresResult:
        """Memory stores, oldest first (of ``user_id`` only, if given), a page at a time."""
        limits = self.limits
        check_limit(limit, limits)
        start = check_optional_id("after", after, limits)
        uid = check_optional_id("user_id", user_id, limits)
        rows = self.backend.read(
            lambda tx: tx.page_memory_stores(uid, start, limit + 1), single_statement=True
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return ListMemoryStoresResult(
            items=[_store(r) for r in rows], next_cursor=rows[-1].id if more else None
        )

    def delete_memory_store(self, memory_store_id: str, *, user_id: str | None = None) -> None:
        """Delete the memory store with every entry and version (their contents are erased);
        deleting a missing one does nothing."""
        sid, uid = self._memory_ids(memory_store_id, user_id)

        def write(tx: Tx) -> None:
            row = tx.memory_store(sid, lock=True)
            if row is not None:
                self._store_owned(row, uid)
                tx.delete_memory_store(sid)

        self.backend.write(write, erasing=True)

    # -- entries ---------------------------------------------------------------------------

    def create_memory(
        self, memory_store_id: str, path: str, content: str, *, user_id: str | None = None
    ) -> MemoryEntry:
        """Create an entry at ``path`` (version 1); a path already live in the store raises
        ``MemoryPathConflictError``."""
        limits = self.limits
        sid, uid = self._memory_ids(memory_store_id, user_id)
        path = check_memory_path(path, limits)
        data = check_memory_content(content, limits)
        now = self.clock()
        entry_id = new_ids("mem_", now)[0]

        def created(store: MemoryStoreRow) -> _Written:
            """The rows of the entry created in ``store``: the quota's rule."""
            quota = limits.max_memory_entries_per_store
            if store.entry_count >= quota:
                raise MemoryQuotaExceededError(
                    f"memory_store_id {sid!r} holds {store.entry_count} entries; the limit is"
                    f" {quota} entries per memory store"
                )
            version = _version_row(store, entry_id, 1, "create", path, data, now)
            entry = MemoryEntryRow(
                sid, path, entry_id, 1, version.seq, len(data), now, now, content=data
            )
            saved = store._replace(
                updated_at=now,
                entry_count=store.entry_count + 1,
                total_size=store.total_size + len(data),
                next_seq=store.next_seq + 1,
            )
            return version, entry, saved

        seen = self._last_memory.store(sid)
        quick = self._ruled(lambda: created(self._store_owned(seen, uid))) if seen else None
        if seen and quick and self._write_unchanged(seen, quick, None):
            return _entry(quick[1])

        def write(tx: Tx) -> _Written:
            store, taken = self._store_and_entry(tx, sid, uid, path=path, lock=True)
            if taken is not None:
                raise self._path_taken(sid, path)
            rows = created(store)
            tx.insert_memory_version(rows[0])
            tx.insert_memory_entry(rows[1])
            tx.save_memory_store(rows[2])
            return rows

        _, entry, saved = self.backend.write(write)
        self._last_memory.remember(saved, entry)
        return _entry(entry)

    def list_memories(
        self,
        memory_store_id: str,
        *,
        path_prefix: str | None = None,
        limit: int = 20,
        after: str | None = None,
        user_id: str | None = None,
    ) -> ListMemoriesResult:
        """Live entries without their content, by path (code point order), a page at a time;
        ``path_prefix`` keeps the paths that start with it (``"notes/"`` for a directory)."""
        limits = self.limits
        sid, uid = self._memory_ids(memory_store_id, user_id)
        check_limit(limit, limits)
        prefix = None
        if path_prefix is not None:
            prefix = check_memory_path_prefix(path_prefix, limits)
        start = None if after is None else decode_path_cursor(after, limits)

        def read(tx: Tx) -> list[MemoryEntryRow]:
            self._store_and_entry(tx, sid, uid)
            return tx.page_memory_entries(sid, after=start, prefix=prefix or None, limit=limit + 1)

        rows = self.backend.read(read)
        if prefix:
            rows = [r for r in rows if r.path.startswith(prefix)]
        more = len(rows) > limit
        rows = rows[:limit]
        return ListMemoriesResult(
            items=[_entry(r) for r in rows],
            next_cursor=path_cursor(rows[-1].path) if more else None,
        )

    def get_memory(
        self, memory_store_id: str, entry_id: str, *, user_id: str | None = None
    ) -> MemoryEntry | None:
        """The live entry with its content (None if its current version is redacted), or None
        if there is no such live entry (or no such store)."""
        sid, uid = self._memory_ids(memory_store_id, user_id)
        eid = check_id("entry_id", entry_id, self.limits)
        return self._get_entry(sid, uid, entry_id=eid)

    def get_memory_by_path(
        self, memory_store_id: str, path: str, *, user_id: str | None = None
    ) -> MemoryEntry | None:
        """The live entry at ``path``, as ``get_memory`` gives it."""
        sid, uid = self._memory_ids(memory_store_id, user_id)
        return self._get_entry(sid, uid, path=check_memory_path(path, self.limits))

    def _get_entry(
        self, sid: str, uid: str | None, *, entry_id: str | None = None, path: str | None = None
    ) -> MemoryEntry | None:
        found = self.backend.read(
            lambda tx: tx.store_and_entry(sid, entry_id=entry_id, path=path, content=True),
            single_statement=True,
        )
        store, entry = found
        if store is None:
            return None
        self._store_owned(store, uid)
        return None if entry is None else _entry(entry)

    def update_memory(
        self,
        memory_store_id: str,
        entry_id: str,
        content: str | None,
        version: int,
        *,
        path: str | None = None,
        user_id: str | None = None,
    ) -> MemoryEntry:
        """Write a new version of the entry, only if ``version`` is its current version
        (otherwise ``MemoryVersionConflictError`` carrying the current one). ``content`` None
        keeps the content (a move: give ``path``); ``path`` moves the entry, keeping its id
        and history."""
        limits = self.limits
        sid, uid = self._memory_ids(memory_store_id, user_id)
        eid = check_id("entry_id", entry_id, limits)
        expected = check_int("version", version, minimum=1)
        data = None if content is None else check_memory_content(content, limits)
        new_path = None if path is None else check_memory_path(path, limits)
        if data is None and new_path is None:
            raise MemoryValidationError("update_memory needs content, path or both")
        now = self.clock()
        seen, was = self._last_memory.get(sid, eid)
        if seen and was and data is not None and new_path is None and was.version == expected:
            body = data  # (for the type checker, inside the lambda)
            quick = self._ruled(
                lambda: self._updated(self._store_owned(seen, uid), was, body, was.path, now)
            )
            if quick and self._write_unchanged(seen, quick, was):
                return _entry(quick[1])

        def write(tx: Tx) -> _Written:
            store, entry = self._store_and_entry(
                tx, sid, uid, entry_id=eid, content=data is None, lock=True
            )
            if entry is None:
                raise self._not_live(sid, eid)
            if entry.version != expected:
                raise MemoryVersionConflictError(
                    f"entry_id {eid!r} is at version {entry.version}, not version {expected}:"
                    " read it again, then retry",
                    current_version=entry.version,
                )
            moved_to = entry.path if new_path is None else new_path
            if moved_to != entry.path and self._store_and_entry(tx, sid, None, path=moved_to)[1]:
                raise self._path_taken(sid, moved_to)
            body = data
            if body is None:
                if entry.redacted_at is not None:
                    raise MemoryValidationError(
                        f"content is required: the current version of entry_id {eid!r} is redacted",
                        argument="content",
                    )
                body = entry.content or b""
            rows = self._updated(store, entry, body, moved_to, now)
            tx.insert_memory_version(rows[0])
            tx.update_memory_entry(rows[1], was_at=entry.path)
            tx.save_memory_store(rows[2])
            return rows

        _, updated, saved = self.backend.write(write)
        self._last_memory.remember(saved, updated)
        return _entry(updated)

    def delete_memory(
        self,
        memory_store_id: str,
        entry_id: str,
        *,
        version: int | None = None,
        user_id: str | None = None,
    ) -> MemoryVersion:
        """Delete the entry: a deletion version is written, earlier versions stay readable, and
        its path is free again. With ``version``, only if that is the entry's current version.
        Deleting an entry already deleted returns its deletion version again."""
        limits = self.limits
        sid, uid = self._memory_ids(memory_store_id, user_id)
        eid = check_id("entry_id", entry_id, limits)
        expected = check_optional_int("version", version, minimum=1)
        now = self.clock()

        def write(tx: Tx) -> MemoryVersionRow:
            store, entry = self._store_and_entry(tx, sid, uid, entry_id=eid, lock=True)
            if entry is None:
                last = tx.last_memory_version(sid, eid)
                if last is not None and last.operation == "delete" and expected is None:
                    return last
                raise self._not_live(sid, eid)
            if expected is not None and entry.version != expected:
                raise MemoryVersionConflictError(
                    f"entry_id {eid!r} is at version {entry.version}, not version {expected}:"
                    " read it again, then retry",
                    current_version=entry.version,
                )
            written = _version_row(store, eid, entry.version + 1, "delete", entry.path, None, now)
            tx.insert_memory_version(written)
            tx.delete_memory_entry(entry)
            saved = store._replace(
                updated_at=now,
                entry_count=store.entry_count - 1,
                total_size=store.total_size - entry.size,
                next_seq=store.next_seq + 1,
            )
            tx.save_memory_store(saved)
            stores[:] = [saved]
            return written

        stores: list[MemoryStoreRow] = []
        deleted = self.backend.write(write)
        self._last_memory.forget(eid)
        if stores:
            self._last_memory.remember(stores[0])
        return _version(deleted)

    # -- versions --------------------------------------------------------------------------

    def list_memory_versions(
        self,
        memory_store_id: str,
        *,
        entry_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
        user_id: str | None = None,
    ) -> ListMemoryVersionsResult:
        """Versions without their content, oldest first: the store's, or one entry's (a deleted
        entry's too); pass ``next_cursor`` (a version id) as ``after``."""
        limits = self.limits
        sid, uid = self._memory_ids(memory_store_id, user_id)
        eid = check_optional_id("entry_id", entry_id, limits)
        check_limit(limit, limits)
        start = check_optional_id("after", after, limits)

        def read(tx: Tx) -> list[MemoryVersionRow]:
            self._store_and_entry(tx, sid, uid)
            after_seq = None
            if start is not None:
                found = _find_version(tx, sid, start, content=False)
                if found is None:
                    raise MemoryValidationError(
                        f"after: no version {start!r} in memory store {sid!r}", argument="after"
                    )
                after_seq = found.seq
            return tx.page_memory_versions(sid, entry_id=eid, after_seq=after_seq, limit=limit + 1)

        rows = self.backend.read(read)
        more = len(rows) > limit
        rows = rows[:limit]
        return ListMemoryVersionsResult(
            items=[_version(r) for r in rows], next_cursor=rows[-1].id if more else None
        )

    def get_memory_version(
        self, memory_store_id: str, version_id: str, *, user_id: str | None = None
    ) -> MemoryVersion | None:
        """One version with its content (None for a deletion or a redacted version), or None."""
        sid, uid = self._memory_ids(memory_store_id, user_id)
        vid = check_id("version_id", version_id, self.limits)

        def read(tx: Tx) -> MemoryVersionRow | None:
            store = tx.memory_store(sid)
            if store is None:
                return None
            self._store_owned(store, uid)
            return _find_version(tx, sid, vid, content=True)

        row = self.backend.read(read)
        return None if row is None else _version(row)

    def redact_memory_version(
        self, memory_store_id: str, version_id: str, *, user_id: str | None = None
    ) -> MemoryVersion:
        """Erase the content of one version for good (its metadata stays, marked redacted);
        redacting it again does nothing. When it is a live entry's current version, the entry
        reads as redacted (content None) until its next update."""
        sid, uid = self._memory_ids(memory_store_id, user_id)
        vid = check_id("version_id", version_id, self.limits)
        now = self.clock()

        def write(tx: Tx) -> MemoryVersionRow:
            self._store_and_entry(tx, sid, uid, lock=True)
            row = _find_version(tx, sid, vid, content=False)
            if row is None:
                raise MemoryVersionNotFoundError(
                    f"version_id {vid!r} not found in memory store {sid!r}"
                )
            if row.redacted_at is not None:
                return row
            tx.redact_memory_version(sid, row.seq, now)
            return row._replace(redacted_at=now)

        return _version(self.backend.write(write, erasing=True))
