"""Memory stores attached to a conversation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backends import Tx
from ..conventions import MEMORY_STORES_KEY
from ..conversations import ConversationMethods
from ..engine import changed, merge_metadata
from ..errors import MemoryStoreNotFoundError, MemoryValidationError
from ..validation import check_id, check_optional_id, decode_json
from .stores import MemoryStoreMethods


def _attached(metadata: str | dict[str, Any] | None) -> list[str]:
    """The attached memory store ids in (encoded or decoded) conversation metadata."""
    decoded: dict[str, Any] = (
        decode_json(metadata) if isinstance(metadata, str) else metadata
    ) or {}
    ids = decoded.get(MEMORY_STORES_KEY)
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


class AttachmentMethods(ConversationMethods, MemoryStoreMethods):
    """Memory stores attached to a conversation (``memoryStoreIds`` in its metadata)."""

    def attach_memory_stores(
        self, conversation_id: str, memory_store_ids: Sequence[str], *, user_id: str | None = None
    ) -> list[str]:
        """Attach memory stores to the conversation (created if needed); return every attached
        id, in the order attached. The ids are kept in its metadata under ``memoryStoreIds``;
        each store must exist and be usable by the conversation's owner."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        ids = self._memory_store_ids(memory_store_ids)
        now = self.clock()

        def write(tx: Tx) -> list[str]:
            row = self._lock_or_create(tx, cid, uid, now)
            owner = row.user_id or uid
            for sid in ids:
                store = tx.memory_store(sid)
                if store is None:
                    raise MemoryStoreNotFoundError(f"memory_store_id {sid!r} not found")
                self._store_owned(store, owner)
            current = _attached(row.metadata)
            merged = current + [sid for sid in ids if sid not in current]
            patch = {MEMORY_STORES_KEY: merged}
            row = changed(tx, row, "conversation.updated", now)
            tx.save_conversation(
                row._replace(user_id=owner, metadata=merge_metadata(row.metadata, patch, limits))
            )
            return merged

        return self.backend.write(write)

    def detach_memory_stores(
        self, conversation_id: str, memory_store_ids: Sequence[str], *, user_id: str | None = None
    ) -> list[str]:
        """Detach memory stores from the conversation; return the ids still attached."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        ids = self._memory_store_ids(memory_store_ids)
        now = self.clock()

        def write(tx: Tx) -> list[str]:
            row = self._locked(tx, cid, uid)
            if row is None:
                return []
            kept = [sid for sid in _attached(row.metadata) if sid not in ids]
            patch = {MEMORY_STORES_KEY: kept or None}
            row = changed(tx, row, "conversation.updated", now)
            tx.save_conversation(row._replace(metadata=merge_metadata(row.metadata, patch, limits)))
            return kept

        return self.backend.write(write)

    def attached_memory_stores(
        self, conversation_id: str, *, user_id: str | None = None
    ) -> list[str]:
        """The ids of the memory stores attached to the conversation, in the order attached."""
        meta = self.get_conversation(conversation_id=conversation_id, user_id=user_id)
        return _attached(None if meta is None else meta.metadata)

    def _memory_store_ids(self, value: object) -> list[str]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise MemoryValidationError(
                "memory_store_ids must be a list of memory store ids", argument="memory_store_ids"
            )
        ids = [check_id(f"memory_store_ids[{i}]", sid, self.limits) for i, sid in enumerate(value)]
        return list(dict.fromkeys(ids))
