"""What an adapter package may use beyond the public API: the stated contract between the core
and its adapters (see ARCHITECTURE.md). Adapters import from ``convostore`` and from here only.

- ``Backend`` / ``Tx``: the database, for an adapter's *own* tables (``Backend.migrate`` creates
  them; ``write`` / ``read`` run its named statements). The core's tables are reached through the
  store's public methods only.
- ``run_sync`` / ``run_in_thread``: the one bridge from async code to the blocking engine.
- ``open_store``: a store-or-URL argument turned into a store, one rule for every adapter.
- ``StartedSync``: a ``sync_messages`` begun in an adapter's transaction
  (``ConversationStore.start_sync_messages``).
- ``MemoryStoreBinding``: what a memory bridge (a framework's file or memory tool over one
  memory store) holds: the store, the memory store found for its user, the retry bound.
- The argument checks the core itself uses, so limits and wording agree everywhere, and
  ``normalize_memory_path`` (NFC), for a bridge that compares or slices paths it was given
  with the paths the store gives back.
- ``Component`` / ``Table`` / ``PruneRequest``: an adapter's tables described once, registered
  under the entry-point group ``convostore.components``: ``Backend.migrate`` creates them and
  ``convostore migrate`` copies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self, TypeAlias

from .async_store import AsyncConversationStore
from .backends import Backend, Tx
from .backends.base import POSTGRESQL_ONLY, SQLITE_ONLY, WouldBlock
from .components import Component, PruneRequest, Table
from .errors import MemoryStoreNotFoundError, MemoryValidationError
from .models import MemoryEntry
from .store import ConversationStore
from .sync import StartedSync
from .threads import run_in_thread, run_sync
from .validation import (
    MAX_INT64,
    Limits,
    check_id,
    check_int,
    check_optional_id,
    check_optional_int,
    check_text,
    encode_json,
    normalize_memory_path,
)

__all__ = [
    "MAX_INT64",
    "POSTGRESQL_ONLY",
    "SQLITE_ONLY",
    "Backend",
    "Component",
    "Limits",
    "MemoryStoreBinding",
    "PruneRequest",
    "StartedSync",
    "StoreLike",
    "Table",
    "Tx",
    "WouldBlock",
    "check_id",
    "check_int",
    "check_optional_id",
    "check_optional_int",
    "check_text",
    "encode_json",
    "normalize_memory_path",
    "open_store",
    "run_in_thread",
    "run_sync",
]

StoreLike: TypeAlias = ConversationStore | AsyncConversationStore | str | None
"""A store, its async twin (its blocking ``sync`` store is used), a URL, or None (the default)."""


def open_store(
    store: object, argument: str = "store", *, replicas: Sequence[str] | None = None
) -> tuple[ConversationStore, bool]:
    """The blocking store for ``store`` (a ``StoreLike``) and whether it was opened here, and so
    is the caller's to close. Anything else is a ``MemoryValidationError`` naming ``argument``.
    ``replicas`` (PostgreSQL standbys, ``ConversationStore(url, replicas=...)``) go with a URL:
    a store passed in keeps its own."""
    if replicas is not None and not (store is None or isinstance(store, str)):
        raise MemoryValidationError(
            f"replicas goes with a URL; the store passed as {argument} keeps its own"
            " (ConversationStore(url, replicas=[...]))",
            argument="replicas",
        )
    if isinstance(store, ConversationStore):
        return store, False
    if isinstance(store, AsyncConversationStore):
        return store.sync, False
    if store is None or isinstance(store, str):
        return ConversationStore(store, replicas=replicas), True
    raise MemoryValidationError(
        f"{argument} must be a ConversationStore, an AsyncConversationStore or a URL,"
        f" got {type(store).__name__}"
    )


class MemoryStoreBinding:
    """One memory store, bound for one user (or none), on a store opened with ``open_store``:
    a mixin for memory bridges, whose constructor calls ``_bind`` (no ``__init__`` here, so it
    mixes with a framework's base class)."""

    _store: ConversationStore
    _deciding: ConversationStore
    _owned: bool
    memory_store_id: str
    user_id: str | None
    max_attempts: int

    def _bind(
        self,
        store: StoreLike,
        memory_store_id: str,
        *,
        user_id: str | None = None,
        max_attempts: int = 5,
    ) -> None:
        """Open ``store`` and find the memory store for ``user_id``; on failure close what was
        opened and raise (``MemoryStoreNotFoundError``, ``MemoryStoreOwnershipError``).
        ``max_attempts`` bounds how often a read-modify-write re-reads an entry that changed."""
        self._store, self._owned = open_store(store)
        # the reads that decide a write: on the primary (with read replicas, a standby behind
        # another process's write would hand back the version that write replaced)
        self._deciding = self._store.on_primary()
        try:
            self.max_attempts = check_int("max_attempts", max_attempts, minimum=1, maximum=100)
            self.user_id = check_optional_id("user_id", user_id, self._store.limits)
            found = self._store.get_memory_store(memory_store_id, user_id=self.user_id)
        except BaseException:
            self.close()
            raise
        if found is None:
            self.close()
            raise MemoryStoreNotFoundError(f"memory_store_id {memory_store_id!r} not found")
        self.memory_store_id = found.memory_store_id

    def _update(
        self, entry: MemoryEntry, content: str | None, *, path: str | None = None
    ) -> MemoryEntry:
        """A new version of ``entry`` written on the version it was read at
        (``MemoryVersionConflictError`` when it changed since); ``content`` None moves it."""
        return self._store.update_memory(
            self.memory_store_id,
            entry.entry_id,
            content,
            entry.version,
            path=path,
            user_id=self.user_id,
        )

    @property
    def store(self) -> ConversationStore:
        """The core store the memory store lives in (for its versions)."""
        return self._store

    def close(self) -> None:
        """Close the store if this object opened it (from a URL or None)."""
        if self._owned:
            self._owned = False
            self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
