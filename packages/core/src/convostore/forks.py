"""Forks: a conversation copied, whole or up to a message, into a new one."""

from __future__ import annotations

from typing import Any

from .backends import ConversationRow, Tx
from .conventions import FORKED_FROM_KEY, MANAGED_BY_KEY, SUMMARY_KEY, UNTIL_KEY
from .engine import Engine, check_unmanaged, merge_metadata, meta_of
from .errors import ConversationExistsError, ConversationNotFoundError, MemoryValidationError
from .models import ConversationMeta
from .validation import check_id, check_optional_id, decode_json, encode_metadata


class ForkMethods(Engine):
    """Forks: a conversation copied into a new one."""

    def fork_conversation(
        self,
        *,
        conversation_id: str,
        new_conversation_id: str,
        up_to: str | None = None,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ConversationMeta:
        """Copy the conversation into a new one, in one transaction: every message, or those
        up to and including the message ``up_to``, with their ids, contents, metadata and
        times; the copy then lives on its own. Its metadata is the source's (less a summary
        that covers messages past the cut) shallow-merged with ``metadata``, plus
        ``forkedFrom``; it is owned by ``user_id``, else by the source's owner. A new id that
        exists raises ``ConversationExistsError``."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        new = check_id("new_conversation_id", new_conversation_id, limits)
        upto = check_optional_id("up_to", up_to, limits)
        uid = check_optional_id("user_id", user_id, limits)
        patch = dict(metadata) if metadata is not None else {}
        encode_metadata(metadata, limits)
        check_unmanaged(metadata, "metadata")
        now = self.clock()

        def write(tx: Tx) -> ConversationRow:
            source = self._locked(tx, cid, uid)
            if source is None:
                raise ConversationNotFoundError(f"conversation_id {cid!r} not found")
            cut = None
            if upto is not None:
                cut = tx.seq_of(cid, upto)
                if cut is None:
                    raise MemoryValidationError(
                        f"up_to: no message {upto!r} in conversation {cid!r}", argument="up_to"
                    )
            row = tx.create_conversation(new, uid or source.user_id, now)
            if row is None:
                raise ConversationExistsError(
                    f"new_conversation_id {new!r} is a conversation already"
                )
            count, last_seq = tx.copy_messages(cid, new, cut)
            held = decode_json(source.metadata) or {}
            held.pop(MANAGED_BY_KEY, None)  # the copy is the caller's, not the component's
            until = held.get(UNTIL_KEY)
            if until is not None and cut is not None:
                seq = tx.seq_of(cid, until) if isinstance(until, str) else None
                if seq is None or seq > cut:
                    held = {k: v for k, v in held.items() if k not in (SUMMARY_KEY, UNTIL_KEY)}
            origin = {"conversationId": cid, "messageId": upto}
            merged = merge_metadata(encode_metadata(held, limits), patch, limits)
            row = row._replace(
                message_count=count,
                next_seq=last_seq + 1,
                metadata=merge_metadata(merged, {FORKED_FROM_KEY: origin}, limits),
            )
            tx.save_conversation(row)
            return row

        return meta_of(self.backend.write(write))
