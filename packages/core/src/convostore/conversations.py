"""Conversations: reading and listing them (cursors), merging their metadata, deleting them."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .backends import ConversationRow, Tx
from .engine import (
    Engine,
    briefs_of,
    changed,
    check_unmanaged,
    merge_metadata,
    meta_of,
    metas_of,
)
from .errors import MemoryValidationError
from .models import ConversationMeta, ListConversationsResult, Order
from .validation import (
    MAX_INT64,
    Limits,
    check_cursors,
    check_id,
    check_limit,
    check_optional_id,
    check_order,
    decode_json,
    encode_metadata,
    preview,
)

_CURSOR_JSON = json.JSONEncoder(ensure_ascii=False)


def _encode_cursor(row: Sequence[Any]) -> str:
    """The cursor after (or before) a listed row (``ConversationRow``'s columns)."""
    raw = _CURSOR_JSON.encode([row[3], row[0]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(name: str, cursor: object, limits: Limits) -> tuple[int, str]:
    """The (last_message_at, id) a ``list_conversations`` cursor holds; anything else, forged
    or damaged, is a ``MemoryValidationError`` before any query runs."""
    if not isinstance(cursor, str):
        raise MemoryValidationError(f"{name} must be a str, got {type(cursor).__name__}")
    # A cursor holds a timestamp and an id: base64 of at most ~4 * max_id_bytes bytes.
    if len(cursor) <= 8 * limits.max_id_bytes + 64:
        try:
            at, cid = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            if type(at) is int and 0 <= at <= MAX_INT64:
                return at, check_id(f"{name} (its conversation id)", cid, limits)
        except (ValueError, TypeError, RecursionError):
            pass
    raise MemoryValidationError(
        f"{name}: {preview(cursor)} is not a cursor returned by list_conversations"
    )


class ConversationMethods(Engine):
    """Conversations: metadata, listings by time and by id prefix, deletes."""

    def get_conversation(
        self, *, conversation_id: str, user_id: str | None = None
    ) -> ConversationMeta | None:
        """The conversation's metadata, or None if it does not exist."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        row = self.backend.read(lambda tx: tx.conversation(cid), single_statement=True)
        return None if row is None else meta_of(self._owned(row, uid))

    def list_conversations(
        self,
        *,
        limit: int = 20,
        order: Order = "desc",
        after: str | None = None,
        before: str | None = None,
        user_id: str | None = None,
    ) -> ListConversationsResult:
        """Conversations by ``last_message_at`` (ties by id), a page at a time.

        Pass ``next_cursor`` as ``after`` for the next page and ``previous_cursor`` as
        ``before`` for the previous one; walking every page visits each conversation once.
        """
        limits = self.limits
        check_limit(limit, limits)
        check_order(order)
        check_cursors(after, before)
        uid = check_optional_id("user_id", user_id, limits)
        bound = None
        if after is not None:
            bound = _decode_cursor("after", after, limits)
        elif before is not None:
            bound = _decode_cursor("before", before, limits)
        forward = before is None  # walking in `order`, or against it towards the start
        descending = (order == "desc") == forward

        def read(tx: Tx) -> tuple[list[tuple[Any, ...]], bool, bool]:
            rows = tx.page_conversations(uid, bound, descending, limit + 1)
            more_ahead = len(rows) > limit
            rows = rows[:limit]
            behind = False
            if rows and bound is not None:
                key = (rows[0][3], rows[0][0])
                behind = bool(tx.page_conversations(uid, key, not descending, 1))
            return rows, more_ahead, behind

        rows, more_ahead, behind = self.backend.read(read, single_statement=bound is None)
        if not forward:
            rows.reverse()
            more_ahead, behind = behind, more_ahead
        return ListConversationsResult(
            items=metas_of(rows),
            next_cursor=_encode_cursor(rows[-1]) if rows and more_ahead else None,
            previous_cursor=_encode_cursor(rows[0]) if rows and behind else None,
        )

    def update_conversation(
        self,
        *,
        conversation_id: str,
        metadata: dict[str, Any],
        user_id: str | None = None,
        if_missing: bool = False,
    ) -> ConversationMeta:
        """Shallow-merge ``metadata`` atomically (a None value deletes the key); creates the
        conversation if it does not exist. With ``if_missing``, only the keys the metadata
        does not hold yet are set (a title set meanwhile by someone else is kept)."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        if not isinstance(metadata, Mapping):
            raise MemoryValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        encode_metadata(metadata, limits)
        check_unmanaged(metadata, "metadata")
        patch = dict(metadata)
        now = self.clock()

        def write(tx: Tx) -> ConversationRow:
            row = self._lock_or_create(tx, cid, uid, now)
            todo = patch
            if if_missing:
                held = decode_json(row.metadata) or {}
                todo = {k: v for k, v in patch.items() if v is not None and held.get(k) is None}
                if not todo:
                    return row
            row = changed(tx, row, "conversation.updated", now)._replace(
                user_id=row.user_id or uid, metadata=merge_metadata(row.metadata, todo, limits)
            )
            tx.save_conversation(row)
            return row

        return meta_of(self.backend.write(write))

    def delete_conversation(self, *, conversation_id: str, user_id: str | None = None) -> None:
        """Delete the conversation and all its messages; deleting a missing one does nothing."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)

        def write(tx: Tx) -> None:
            row = self._locked(tx, cid, uid)
            if row is not None:
                self._delete_managed(tx, [row])
                tx.delete_conversation(cid)

        self.backend.write(write, erasing=True)

    def find_conversations(
        self, *, id_prefix: str, user_id: str | None = None
    ) -> list[ConversationMeta]:
        """Every conversation whose id starts with ``id_prefix``, ordered by id (all of them: a
        range scan of the primary key); with ``user_id``, only that user's. For adapters that
        keep one conversation per key under a common prefix (a project, a session's subkeys)."""
        prefix = check_id("id_prefix", id_prefix, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        rows = self.backend.read(
            lambda tx: tx.conversations_by_prefix(prefix, uid), single_statement=True
        )
        return metas_of(rows)

    def find_conversation_briefs(
        self, *, id_prefix: str, user_id: str | None = None, metadata: bool | str = True
    ) -> list[tuple[str, int, int, Any]]:
        """``find_conversations`` for listings that need a few fields of many rows: each
        conversation as a tuple ``(conversation_id, last_message_at, message_count,
        metadata)``, without a model per row. ``metadata`` names what the last field holds:
        ``True`` the metadata; a key, only that key's value (None when absent), and where it
        is the metadata's first key the rest is not decoded; ``False`` None, the metadata
        not even read."""
        prefix = check_id("id_prefix", id_prefix, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        if not isinstance(metadata, (bool, str)):
            raise MemoryValidationError(
                f"metadata must be a bool or a key, got {type(metadata).__name__}",
                argument="metadata",
            )
        most = self.limits.max_metadata_bytes
        if isinstance(metadata, str) and len(metadata) > most:  # no stored metadata holds it
            raise MemoryValidationError(
                f"metadata: a key of {len(metadata)} characters is longer than the limit of"
                f" {most} bytes of metadata",
                argument="metadata",
            )
        read = metadata is not False
        rows = self.backend.read(
            lambda tx: tx.briefs_by_prefix(prefix, uid, metadata=read), single_statement=True
        )
        return briefs_of(rows, None if isinstance(metadata, bool) else metadata)

    def delete_conversations(
        self,
        *,
        conversation_ids: Sequence[str] = (),
        id_prefix: str | None = None,
        user_id: str | None = None,
    ) -> int:
        """Delete the conversations named and, with ``id_prefix``, every conversation whose id
        starts with it, with their messages, in one transaction; return how many went. Each is
        locked first, as ``delete_conversation`` does, so a concurrent append either lands
        before the delete or creates the conversation anew after it. With ``user_id``, a
        conversation of another user among them raises ``ConversationOwnershipError`` and
        nothing is deleted."""
        limits = self.limits
        if isinstance(conversation_ids, str) or not isinstance(conversation_ids, Sequence):
            raise MemoryValidationError(
                "conversation_ids must be a list of conversation ids", argument="conversation_ids"
            )
        ids = [check_id("conversation_ids[]", cid, limits) for cid in conversation_ids]
        prefix = check_optional_id("id_prefix", id_prefix, limits)
        uid = check_optional_id("user_id", user_id, limits)

        def write(tx: Tx) -> int:
            # Locks in id order, so concurrent multi-deletes cannot deadlock each other.
            rows = {
                cid: row for cid in sorted(set(ids)) if (row := tx.conversation(cid, lock=True))
            }
            if prefix is not None:
                rows.update((r.id, r) for r in tx.conversations_by_prefix(prefix, None, lock=True))
            for row in rows.values():
                self._owned(row, uid)
            self._delete_managed(tx, [rows[cid] for cid in sorted(rows)])
            for cid in sorted(rows):
                tx.delete_conversation(cid)
            return len(rows)

        return self.backend.write(write, erasing=True)

    def delete_user_data(self, *, user_id: str) -> int:
        """Delete every conversation of ``user_id`` with its messages, and every memory store
        of ``user_id`` with its entries and versions; return how many conversations went."""
        uid = check_id("user_id", user_id, self.limits)

        def write(tx: Tx) -> int:
            self._delete_managed(tx, tx.managed_conversations_of(uid))
            tx.delete_user_memory_stores(uid)
            return tx.delete_user(uid)

        return self.backend.write(write, erasing=True)
