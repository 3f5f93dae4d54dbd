"""Messages: append (the quota, idempotent ids, the one-statement append), pages, edits and deletes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, overload

from . import telemetry
from .backends import ConversationRow, MessageRow, Tx
from .engine import Engine, changed, merge_metadata, message_of, messages_of
from .errors import (
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MessageIdConflictError,
    MessageNotFoundError,
)
from .ids import new_ids
from .models import Message, Order, Role
from .validation import (
    check_cursors,
    check_id,
    check_last,
    check_limit,
    check_optional_id,
    check_order,
    decode_json,
    encode_content,
    encode_metadata,
)

Fold = Callable[[dict[str, Any] | None, Sequence[Message]], Mapping[str, Any] | None]
"""``fold(metadata, added) -> patch``: see ``ConversationStore.append_messages``."""


class Added(Sequence[Message]):
    """The messages an append adds, given to its fold: each ``Message`` is built when read (a
    fold that marks the conversation reads none)."""

    def __init__(self, rows: Sequence[MessageRow]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [message_of(row) for row in self._rows[index]]
        return message_of(self._rows[index])


class MessageInput(TypedDict, total=False):
    """One message of an ``append_messages`` batch; ``role`` and ``content`` are required."""

    role: Role
    content: Any
    metadata: dict[str, Any] | None
    message_id: str | None
    created_at: int


class MessageMethods(Engine):
    """Appending, reading, editing and deleting a conversation's messages."""

    def append_message(
        self,
        *,
        conversation_id: str,
        role: Role,
        content: Any,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        message_id: str | None = None,
    ) -> str:
        """Append a message, creating the conversation if needed; return its ``msg_`` id.

        A ``message_id`` you supply makes retries idempotent: the same id with the same message
        is stored once; with a different message it raises ``MessageIdConflictError``.
        """
        message: MessageInput = {"role": role, "content": content, "metadata": metadata}
        if message_id is not None:
            message["message_id"] = message_id
        return self.append_messages(
            conversation_id=conversation_id, messages=[message], user_id=user_id
        )[0]

    def append_messages(
        self,
        *,
        conversation_id: str,
        messages: Sequence[MessageInput],
        user_id: str | None = None,
        fold: Fold | None = None,
    ) -> list[str]:
        """Append several messages in one transaction: all are stored, or none.

        ``fold(metadata, added)``, if given, runs inside that transaction once the conversation
        is locked, with its current metadata and the messages this call adds (not those already
        stored under the same ``message_id``); the dict it returns is shallow-merged into the
        metadata (None deletes a key) in the same transaction, so concurrent appends fold one
        after another. It may run again if the transaction is retried: keep it pure.

        A message's ``created_at`` (epoch ms), where given, is kept as its time (a message
        made elsewhere, brought in by an importer); the others take the append's time.
        """
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise MemoryValidationError("messages must be a list of message dicts")
        if not messages:
            self._check_open()
            return []
        now = self.clock()
        single = len(messages) == 1
        prepared = []
        for i, (item, fresh) in enumerate(
            zip(messages, new_ids("msg_", now, len(messages)), strict=True)
        ):
            try:
                prepared.append(self._prepare(item, now, fresh))
            except MemoryValidationError as exc:
                if single:
                    raise
                raise exc.in_batch("messages", i) from None
        ids = [m.id for m in prepared]
        if len(set(ids)) != len(ids):
            raise MemoryValidationError(
                "messages: two messages of one batch have the same message_id"
            )
        supplied = [
            m.id for m, item in zip(prepared, messages, strict=True) if item.get("message_id")
        ]
        times = {
            m.id: m.created_at
            for m, item in zip(prepared, messages, strict=True)
            if item.get("created_at") is not None
        }

        if self._append_counted(
            cid, uid, prepared, now, fold, supplied=bool(supplied), times=times
        ):
            return ids
        saved: list[tuple[ConversationRow, str]] = []  # the row as written, its last message

        def write(tx: Tx) -> list[str]:
            at = tx.tick(now) if self.ordered else now
            row, existing = self._locked_with(tx, cid, uid, at, supplied)
            new: list[MessageRow] = []
            for m in prepared:
                old = existing.get(m.id)
                if old is None:
                    new.append(m)
                elif (old.role, old.content, old.metadata) != (m.role, m.content, m.metadata):
                    raise MessageIdConflictError(
                        f"message_id {m.id!r} is already used in conversation {cid!r}"
                        " by a different message"
                    )
            if not new:
                return ids
            new, appended = self._grown(row, new, uid, at, times)
            if fold is not None:
                patch = fold(decode_json(row.metadata), Added(new))
                if patch:
                    merged = merge_metadata(row.metadata, patch, limits)
                    appended = changed(tx, appended, "conversation.updated", at)
                    appended = appended._replace(metadata=merged)
            tx.insert_messages(cid, new)
            tx.save_conversation(appended)
            saved[:] = [(appended, new[-1].id)]
            return ids

        written = self.backend.write(write)
        if saved and self.backend.conditional_append:
            self._last_rows.remember(*saved[0])
        return written

    def _locked_with(
        self, tx: Tx, cid: str, user_id: str | None, at: int, ids: Sequence[str]
    ) -> tuple[ConversationRow, dict[str, MessageRow]]:
        """The conversation's row, locked (created if needed), owned and writable, with its
        messages among ``ids``. The locking read and the lookup travel together (the lookup
        runs once the lock is held); where the conversation was created meanwhile, the
        lookup runs again."""
        locked = tx.conversation_later(cid, lock=True)
        found = tx.messages_by_id_later(cid, ids)
        existed: list[bool] = []

        def read_locked() -> ConversationRow | None:
            row = locked()
            existed.append(row is not None)
            return row

        row = self._writable(self._lock_or_create(tx, cid, user_id, at, read_locked))
        return row, found() if existed[0] else tx.messages_by_id(cid, ids)

    def _grown(
        self,
        row: ConversationRow,
        new: list[MessageRow],
        user_id: str | None,
        at: int,
        times: Mapping[str, int],
    ) -> tuple[list[MessageRow], ConversationRow]:
        """``new`` placed after the conversation's messages, and its row once they are: the
        quota's rule. A message takes the time ``at``, or its own in ``times``."""
        if row.message_count > self._room(len(new)):
            raise MemoryQuotaExceededError(
                f"conversation_id {row.id!r} holds {row.message_count} messages; appending"
                f" {len(new)} would pass the limit of"
                f" {self.limits.max_messages_per_conversation} messages per conversation"
            )
        # Built whole: a NamedTuple's ``_replace`` costs more than the rest of this
        placed = [
            MessageRow(
                row.next_seq + i,
                m.id,
                m.role,
                m.content,
                m.metadata,
                times.get(m.id, at),
                m.updated_at,
            )
            for i, m in enumerate(new)
        ]
        count = len(new)
        return placed, ConversationRow(
            row.id,
            row.user_id or user_id,
            row.created_at,
            max(row.last_message_at, at),
            row.message_count + count,
            row.next_seq + count,
            row.metadata,
        )

    def _room(self, count: int) -> int:
        """The most messages a conversation may hold for ``count`` more to fit: the quota."""
        return self.limits.max_messages_per_conversation - count

    def _append_counted(
        self,
        cid: str,
        user_id: str | None,
        prepared: list[MessageRow],
        now: int,
        fold: Fold | None,
        *,
        supplied: bool,
        times: Mapping[str, int],
    ) -> bool:
        """Append in one statement (one round trip on a server database) where this store
        wrote the conversation last: the rules (and ``fold``) run on its row as written then,
        the messages stored only if what they read is still that (the owner, the metadata, room
        under the quota; where the caller ``supplied`` ids, none of them taken), numbered after
        the messages stored then, whoever appended since (``Tx.append_counted``). False where
        not tried, where ``fold`` changes the metadata, where that changed or an id is taken;
        the caller then takes the locking path (which raises any error from the row as it is,
        and skips the messages already stored)."""
        if not self.backend.conditional_append:
            return False  # nothing remembered: the one path there is
        seen, _ = self._last_rows.row(cid)
        if seen is None or self.ordered or len(prepared) > 100:
            telemetry.one_statement("append", "skipped")
            return False
        try:
            rows, row = self._grown(
                self._writable(self._owned(seen, user_id)), prepared, user_id, now, times
            )
        except ConvostoreError:
            telemetry.one_statement("append", "skipped")
            return False
        if fold is not None and fold(decode_json(seen.metadata), Added(rows)):
            telemetry.one_statement("append", "skipped")
            return False
        room = self._room(len(rows))
        written = self.backend.write(
            lambda tx: tx.append_counted(seen, rows, row, room=room, new_ids=supplied)(),
            single_statement=True,
        )
        if written is not None:
            self._last_rows.remember(written, rows[-1].id)
            telemetry.one_statement("append", "hit")
            return True
        self._last_rows.forget(cid)
        telemetry.one_statement("append", "miss")
        return False

    def get_messages(
        self,
        *,
        conversation_id: str,
        limit: int = 20,
        order: Order = "asc",
        after: str | None = None,
        before: str | None = None,
        user_id: str | None = None,
    ) -> list[Message]:
        """A page of messages; ``[]`` if the conversation does not exist.

        ``after`` / ``before`` (message ids) select that side of the message in chronological
        order, and the page holds the ``limit`` messages nearest it; without a cursor, ``asc``
        gives the oldest ``limit`` and ``desc`` the newest. ``order`` sorts the page.
        ``user_id``, on this and every read and delete, refuses a conversation another user
        owns with ``ConversationOwnershipError``, as appends do.
        """
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        check_limit(limit, limits)
        check_order(order)
        check_cursors(after, before)
        check_optional_id("after", after, limits)
        check_optional_id("before", before, limits)

        # Walk away from the cursor (or from the requested end); `order` only sorts the page.
        newest_first = before is not None or (after is None and order == "desc")

        def read(tx: Tx) -> list[tuple[Any, ...]]:
            after_seq = before_seq = None
            for name, cursor in (("after", after), ("before", before)):
                if cursor is not None:
                    seq = tx.seq_of(cid, cursor)
                    if seq is None:
                        raise MemoryValidationError(
                            f"{name}: no message {cursor!r} in conversation {cid!r}"
                        )
                    after_seq, before_seq = (seq, None) if name == "after" else (None, seq)
            return tx.message_page(
                cid,
                after_seq=after_seq,
                before_seq=before_seq,
                newest_first=newest_first,
                limit=limit,
            )

        if uid is not None and after is None and before is None and self.backend.joined_owner_check:
            # The owner's check and the page in one statement (one round trip, one snapshot).
            owned = self.backend.read(
                lambda tx: tx.owned_message_page(cid, newest_first=newest_first, limit=limit),
                single_statement=True,
            )
            rows: list[tuple[Any, ...]] = []
            if owned is not None:
                owner, rows = owned
                self._check_owner(cid, owner, uid)
        else:
            rows = (
                self._read_owned(cid, uid, read, single_statement=after is None and before is None)
                or []
            )
        if newest_first != (order == "desc"):
            rows.reverse()
        return messages_of(rows)

    def get_history(
        self, *, conversation_id: str, last: int | None = None, user_id: str | None = None
    ) -> list[Message]:
        """Every message (or the newest ``last``), oldest first, in one read; for adapters that
        load a whole session. ``last=0`` gives ``[]``."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        if check_last(last) == 0:
            return []
        rows = (
            self._read_owned(
                cid,
                uid,
                lambda tx: tx.message_page(
                    cid, after_seq=None, before_seq=None, newest_first=last is not None, limit=last
                ),
                single_statement=True,
            )
            or []
        )
        if last is not None:
            rows.reverse()
        return messages_of(rows)

    def get_contents(
        self, *, conversation_id: str, last: int | None = None, user_id: str | None = None
    ) -> list[Any]:
        """``get_history`` without the ``Message`` wrapping: each message's content, oldest
        first, in one read; for adapters whose stored items are the contents."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        if check_last(last) == 0:
            self._check_open()
            return []
        texts = (
            self._read_owned(
                cid, uid, lambda tx: tx.message_contents(cid, last), single_statement=True
            )
            or []
        )
        # Every stored content is one JSON text: parse them all in one call.
        contents: list[Any] = json.loads("[" + ",".join(texts) + "]")
        return contents

    def pop_message(self, *, conversation_id: str, user_id: str | None = None) -> Message | None:
        """Remove and return the newest message, atomically; None if there is none."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        now = self.clock()

        def write(tx: Tx) -> MessageRow | None:
            row = self._locked(tx, cid, uid)
            if row is None:
                return None
            self._writable(row)
            newest = tx.page_messages(
                cid, after_seq=None, before_seq=None, newest_first=True, limit=1
            )
            if not newest:
                return None
            tx.delete_message(cid, newest[0].id)
            row = row._replace(message_count=row.message_count - 1)
            tx.save_conversation(changed(tx, row, "message.deleted", now, newest[0].id))
            return newest[0]

        popped = self.backend.write(write)
        return None if popped is None else message_of(popped)

    def get_message(
        self, *, conversation_id: str, message_id: str, user_id: str | None = None
    ) -> Message | None:
        """One message by id, or None."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        mid = check_id("message_id", message_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        row = self._read_owned(cid, uid, lambda tx: tx.message(cid, mid), single_statement=True)
        return None if row is None else message_of(row)

    def update_message(
        self,
        *,
        conversation_id: str,
        message_id: str,
        content: Any = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Message:
        """Overwrite a message's content and/or metadata (metadata is replaced, not merged)."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        mid = check_id("message_id", message_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        if content is None and metadata is None:
            raise MemoryValidationError("update_message needs content, metadata or both")
        new_content = None if content is None else encode_content(content, limits)
        new_metadata = encode_metadata(metadata, limits)
        now = self.clock()

        def write(tx: Tx) -> MessageRow:
            conversation = self._locked(tx, cid, uid)
            row = tx.message(cid, mid)
            if conversation is None or row is None:
                raise MessageNotFoundError(f"message_id {mid!r} not found in conversation {cid!r}")
            self._writable(conversation)
            row = row._replace(
                content=row.content if new_content is None else new_content,
                metadata=row.metadata if metadata is None else new_metadata,
                updated_at=max(now, row.created_at),
            )
            tx.update_message(cid, row)
            tx.save_conversation(changed(tx, conversation, "message.updated", now, mid))
            return row

        return message_of(self.backend.write(write))

    def delete_message(
        self, *, conversation_id: str, message_id: str, user_id: str | None = None
    ) -> None:
        """Delete one message; deleting a missing message does nothing."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        mid = check_id("message_id", message_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)

        now = self.clock()

        def write(tx: Tx) -> None:
            row = self._locked(tx, cid, uid)
            if row is not None and self._writable(row) and tx.delete_message(cid, mid):
                row = row._replace(message_count=row.message_count - 1)
                tx.save_conversation(changed(tx, row, "message.deleted", now, mid))

        self.backend.write(write, erasing=True)

    def clear_messages(self, *, conversation_id: str, user_id: str | None = None) -> None:
        """Delete every message of the conversation; its metadata stays."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)

        now = self.clock()

        def write(tx: Tx) -> None:
            row = self._locked(tx, cid, uid)
            if row is not None:
                self._writable(row)
                tx.clear_messages(cid)
                row = row._replace(message_count=0)
                tx.save_conversation(changed(tx, row, "messages.cleared", now))

        self.backend.write(write, erasing=True)

    def existing_message_ids(
        self, *, conversation_id: str, message_ids: Sequence[str], user_id: str | None = None
    ) -> set[str]:
        """Which of ``message_ids`` the conversation holds (for idempotent appends)."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        if isinstance(message_ids, str) or not isinstance(message_ids, Sequence):
            raise MemoryValidationError(
                "message_ids must be a list of message ids", argument="message_ids"
            )
        mids = [check_id("message_ids[]", mid, limits) for mid in message_ids]
        if not mids:
            return set()
        found = self._read_owned(
            cid, uid, lambda tx: tx.messages_by_id(cid, mids), single_statement=True
        )
        return set(found or ())
