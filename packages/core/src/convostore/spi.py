"""What an adapter package may use beyond the public API: the stated contract between the core
and its adapters (see ARCHITECTURE.md). Adapters import from ``convostore`` and from here only.

- ``Backend`` / ``Tx``: the database, for an adapter's *own* tables (``Backend.migrate`` creates
  them; ``write`` / ``read`` run its named statements). The core's tables are reached through the
  store's public methods only.
- ``run_sync`` / ``run_in_thread``: the one bridge from async code to the blocking engine.
- ``open_store``: a store-or-URL argument turned into a store, one rule for every adapter.
- The argument checks the core itself uses, so limits and wording agree everywhere.
- ``Component`` / ``Table`` / ``PruneRequest``: an adapter's tables described once, registered
  under the entry-point group ``convostore.components``: ``Backend.migrate`` creates them and
  ``convostore migrate`` copies them.
"""

from __future__ import annotations

from typing import TypeAlias

from .backends import Backend, Tx
from .backends.base import POSTGRESQL_ONLY, SQLITE_ONLY, WouldBlock
from .components import Component, PruneRequest, Table
from .errors import MemoryValidationError
from .store import AsyncConversationStore, ConversationStore
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
)

__all__ = [
    "MAX_INT64",
    "POSTGRESQL_ONLY",
    "SQLITE_ONLY",
    "Backend",
    "Component",
    "Limits",
    "PruneRequest",
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
    "open_store",
    "run_in_thread",
    "run_sync",
]

StoreLike: TypeAlias = ConversationStore | AsyncConversationStore | str | None
"""A store, its async twin (its blocking ``sync`` store is used), a URL, or None (the default)."""


def open_store(store: object, argument: str = "store") -> tuple[ConversationStore, bool]:
    """The blocking store for ``store`` (a ``StoreLike``) and whether it was opened here, and so
    is the caller's to close. Anything else is a ``MemoryValidationError`` naming ``argument``."""
    if isinstance(store, ConversationStore):
        return store, False
    if isinstance(store, AsyncConversationStore):
        return store.sync, False
    if store is None or isinstance(store, str):
        return ConversationStore(store), True
    raise MemoryValidationError(
        f"{argument} must be a ConversationStore, an AsyncConversationStore or a URL,"
        f" got {type(store).__name__}"
    )
