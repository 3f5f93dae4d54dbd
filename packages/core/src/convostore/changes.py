"""The change feed: what happened to a conversation since a cursor, and waiting for a change."""

from __future__ import annotations

from .backends import ChangeRow, ConversationRow, MessageRow, Tx
from .engine import Engine, message_of, meta_of
from .errors import MemoryValidationError
from .models import ConversationChange, ConversationChanges
from .validation import check_id, check_int, check_optional_id, check_optional_int


class ChangeMethods(Engine):
    """The change feed of a conversation, and waiting for the next change."""

    def get_changes(
        self,
        *,
        conversation_id: str,
        after: int | None = None,
        limit: int = 100,
        user_id: str | None = None,
    ) -> ConversationChanges:
        """The conversation's changes after the cursor ``after``, in commit order, at most
        ``limit`` (appends, message updates and deletes, clears, metadata changes, from every
        writer of the database). ``after=None`` starts from now: no items, and the cursor to
        pass next time. A cursor past the conversation's last change (it was deleted and made
        again) starts over from its beginning."""
        limits = self.limits
        cid = check_id("conversation_id", conversation_id, limits)
        uid = check_optional_id("user_id", user_id, limits)
        check_int("limit", limit, minimum=1, maximum=limits.max_page_size)
        start = check_optional_int("after", after)

        def read(
            tx: Tx,
        ) -> tuple[
            ConversationRow | None, list[MessageRow], list[ChangeRow], dict[str, MessageRow]
        ]:
            row = tx.conversation(cid)
            if row is None or start is None:
                return row, [], [], {}
            self._owned(row, uid)
            since = start if start < row.next_seq else 0
            messages = tx.page_messages(
                cid, after_seq=since, before_seq=None, newest_first=False, limit=limit
            )
            changes = tx.changes_after(cid, since, limit)
            updated = [c.message_id for c in changes if c.kind == "message.updated"]
            return row, messages, changes, tx.messages_by_id(cid, [m for m in updated if m])

        row, messages, changes, current = self.backend.read(read)
        if row is None:
            return ConversationChanges(items=[], cursor=start or 0)
        self._owned(row, uid)
        items = [
            ConversationChange(
                seq=m.seq,
                kind="message.created",
                created_at=m.created_at,
                message_id=m.id,
                message=message_of(m),
            )
            for m in messages
        ]
        for c in changes:
            found = current.get(c.message_id) if c.message_id else None
            items.append(
                ConversationChange(
                    seq=c.seq,
                    kind=c.kind,  # type: ignore[arg-type]  # written by _changed
                    created_at=c.created_at,
                    message_id=c.message_id,
                    message=None if found is None else message_of(found),
                )
            )
        items.sort(key=lambda change: change.seq)
        more = len(items) > limit or len(messages) == limit or len(changes) == limit
        items = items[:limit]
        cursor = items[-1].seq if more and items else row.next_seq - 1
        return ConversationChanges(items=items, cursor=cursor, conversation=meta_of(row))

    def enable_change_notifications(self) -> None:
        """Make every write to a conversation wake ``wait_for_change`` in other processes
        (PostgreSQL: a trigger sending ``NOTIFY``; it costs every commit a little, so it is
        off until a server asks for it). On SQLite ``wait_for_change`` needs nothing."""
        self.backend.enable_notifications()

    def wait_for_change(self, timeout: float = 1.0) -> bool:
        """Block until a write may have changed the database since the previous call (or, on
        SQLite, since the store opened; on PostgreSQL since ``enable_change_notifications``),
        in this or another process, or ``timeout`` seconds pass; True if one may have. Then
        read what changed with ``get_changes``. SQLite is checked every 50 ms."""
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 <= timeout <= 86_400
        ):
            raise MemoryValidationError(
                f"timeout must be a number of seconds from 0 to 86400, got {timeout!r}",
                argument="timeout",
            )
        return self.backend.wait_for_change(float(timeout))
