"""Managed conversations: ``sync_messages`` and ``start_sync_messages`` (a conversation kept
equal to a list that a component holds, such as a LangGraph thread)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from . import telemetry
from .backends import ChangeRow, ConversationRow, MessageRow, Tx
from .conventions import MANAGED_BY_KEY
from .engine import Engine, check_unmanaged, manager_of, merge_metadata, meta_of
from .errors import (
    ConflictError,
    ConversationExistsError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    MessageIdConflictError,
)
from .messages import MessageInput
from .models import ConversationMeta
from .recent import LastRows
from .validation import (
    check_id,
    check_optional_id,
    check_optional_int,
    decode_json,
    encode_metadata,
)


@dataclasses.dataclass(frozen=True)
class _SyncPlan:
    """What ``sync_messages`` was asked, validated."""

    cid: str
    uid: str | None
    anchor: str | None
    expected: int | None
    stamp: int | None
    now: int
    patch: dict[str, Any]
    messages: list[MessageRow]

    @property
    def last_message_id(self) -> str | None:
        """The conversation's last message once synced (None: none, or not known)."""
        return self.messages[-1].id if self.messages else self.anchor


_Head = Callable[[], tuple[ConversationRow | None, int | None, int | None, int]]


def _few_ids(plan: _SyncPlan) -> list[str]:
    """The ids of a delta's few messages (checked against the stored ones in the first
    read); none for a whole list (all stored messages are read then) or a long tail."""
    if plan.anchor is None or len(plan.messages) > 500:
        return []
    return [m.id for m in plan.messages]


class _SyncWrites(NamedTuple):
    """What a ``sync_messages`` writes: the conversation's row, the messages appended,
    updated and deleted, the changes recorded."""

    saved: ConversationRow
    rows: list[MessageRow]
    edits: list[MessageRow]
    gone: list[MessageRow]
    changes: list[ChangeRow]


class StartedSync:
    """A ``sync_messages`` begun in an adapter's transaction (``start_sync_messages``):
    ``finish()`` after the adapter's statements, ``confirm()`` after the commit."""

    def __init__(
        self,
        last_rows: LastRows | None,
        plan: _SyncPlan,
        finish: Callable[[], ConversationRow],
        sent: Callable[[], bool] | None = None,
    ) -> None:
        self._last_rows = last_rows
        self._plan = plan
        self._finish = finish
        self._sent = sent
        self._row: ConversationRow | None = None

    def finish(self) -> None:
        """Write the rest of the sync, inside the transaction; what it raises comes before
        it writes anything (as ``sync_messages``')."""
        self._row = self._finish()

    def confirm(self) -> None:
        """After the commit: ``ConflictError`` where the conversation had changed since this
        store wrote it, and nothing of the sync was written (sync again then)."""
        plan, last_rows = self._plan, self._last_rows
        sent = None if self._sent is None else self._sent()
        if sent is not None:
            telemetry.one_statement("sync", "hit" if sent else "miss")
        if sent is False:
            if last_rows is not None:
                last_rows.forget(plan.cid)
            raise ConflictError(
                f"conversation_id {plan.cid!r} changed since this store wrote it: nothing"
                " was appended"
            )
        if last_rows is not None and self._row is not None:
            last_rows.remember(self._row, plan.last_message_id)


def _kept(kept: object, after: object) -> int | None:
    """``sync_messages``' ``kept``: a count of messages, only with ``after``."""
    if kept is not None and after is None:
        raise MemoryValidationError("kept goes with after (the message it counts up to)")
    return check_optional_int("kept", kept, minimum=0)


def _tail_plan(
    old: Sequence[MessageRow], new: Sequence[MessageRow], when: int
) -> tuple[list[MessageRow], list[MessageRow], list[MessageRow]]:
    """How stored messages ``old`` become ``new`` (both in order, matched by id and role):
    (messages updated in place, messages deleted, messages appended). A stored message that
    ``new`` names next stays (updated if its content or metadata differ), one that ``new``
    does not name is deleted; at the first other difference (an insertion or a move) the
    stored rest is deleted and the rest of ``new`` appended. Linear in both."""
    position = {m.id: k for k, m in enumerate(new)}
    edits: list[MessageRow] = []
    gone: list[MessageRow] = []
    j = 0
    for i, mine in enumerate(old):
        k = position.get(mine.id)
        if k is None:
            gone.append(mine)
            continue
        theirs = new[j] if j < len(new) else None
        if k != j or theirs is None or theirs.role != mine.role:
            gone += old[i:]
            break
        if (mine.content, mine.metadata) != (theirs.content, theirs.metadata):
            edits.append(
                mine._replace(
                    content=theirs.content,
                    metadata=theirs.metadata,
                    updated_at=max(when, mine.created_at),
                )
            )
        j += 1
    return edits, gone, list(new[j:])


def _no_clash(
    tx: Tx, cid: str, anchor: str, added: Sequence[MessageRow], leaving: set[str]
) -> None:
    """Refuse messages whose ids the conversation already uses up to ``anchor``."""
    for i in range(0, len(added), 500):
        found = tx.messages_by_id(cid, [m.id for m in added[i : i + 500]])
        clash = [mid for mid in found if mid not in leaving]
        if clash:
            raise MessageIdConflictError(
                f"message_id {clash[0]!r} is already used in conversation {cid!r}"
                f" at or before {anchor!r}"
            )


class SyncMethods(Engine):
    """Conversations kept equal to a list by the component that manages them."""

    def sync_messages(
        self,
        *,
        conversation_id: str,
        messages: Sequence[MessageInput],
        after: str | None = None,
        kept: int | None = None,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        at: int | None = None,
        tx: Tx | None = None,
    ) -> ConversationMeta:
        """Make the conversation's messages equal to a list, in one transaction, writing only
        what differs; the conversation is created if needed.

        Messages are matched by id: each one names its ``message_id``. Without ``after``,
        ``messages`` is the whole list; with ``after`` (the id of a message the conversation
        holds) it is what follows that message, and the messages up to it are left as they
        are without being read, so the call costs what changed, not the history. ``kept`` is
        how many messages the caller believes there are up to and including ``after``:
        another count, or an ``after`` the conversation lacks, raises ``ConflictError`` and
        writes nothing (sync the whole list then). Past that point a stored message that
        ``messages`` names next, with the same role, stays (updated in place if its content
        or metadata differ), one it does not name is deleted, and what is left of
        ``messages`` is appended; where a message would have to go between stored ones (an
        insertion, a move), the stored rest is deleted and appended again from the list. The
        change feed records each deletion, update and append. ``metadata`` is shallow-merged, recorded only if it changes something. ``at``
        (epoch ms, default now) is the time of the appended messages, of the change and of a
        conversation created here.

        On an ``as_component`` store the conversation becomes managed by that component
        (``managedBy``, with the keys of ``metadata["managedBy"]`` if given; a conversation
        that already holds messages it does not manage raises ``ConversationExistsError``);
        on any other store a managed conversation raises ``ConversationManagedError``.

        ``tx``: run inside this write transaction of the store's backend (an adapter's own
        ``backend.write``), so the conversation commits with the adapter's rows. Every error
        this call raises (``ConvostoreError``, not ``StorageError``) comes before it writes
        anything, so the caller may catch it and still commit its own writes.
        """
        plan = self._sync_plan(conversation_id, messages, after, kept, user_id, metadata, at)
        if tx is not None:
            return meta_of(self._sync(tx, plan=plan))
        # Not an erasing write: what it deletes, the component still keeps (older checkpoints).
        row = self.backend.write(functools.partial(self._sync, plan=plan))
        if self.backend.conditional_append:
            self._last_rows.remember(row, plan.last_message_id)
        return meta_of(row)

    def start_sync_messages(
        self,
        *,
        tx: Tx,
        conversation_id: str,
        messages: Sequence[MessageInput],
        after: str | None = None,
        kept: int | None = None,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        at: int | None = None,
    ) -> StartedSync:
        """``sync_messages(..., tx=tx)`` in steps, for an adapter that writes rows of its own
        in the same transaction: this sends the conversation's first statement (and raises
        ``MemoryValidationError`` for bad arguments); ``finish()`` on what it returns
        finishes the sync after the adapter's statements, ``confirm()`` after the commit.
        On PostgreSQL the first statement travels with the adapter's; an append to a
        conversation this store wrote last is that statement alone, written only where the
        conversation is still as written then (else ``confirm()`` raises ``ConflictError``
        and nothing of the sync was written: sync again, in a transaction of its own)."""
        plan = self._sync_plan(conversation_id, messages, after, kept, user_id, metadata, at)
        last_rows = self._last_rows if self.backend.conditional_append else None
        quick = self._sync_unchanged(tx, plan)
        if quick is not None:
            saved, sent = quick
            return StartedSync(last_rows, plan, lambda: saved, sent)
        head = tx.sync_head(plan.cid, plan.anchor, _few_ids(plan))
        return StartedSync(last_rows, plan, lambda: self._sync(tx, plan=plan, head=head))

    def _sync_unchanged(
        self, tx: Tx, plan: _SyncPlan
    ) -> tuple[ConversationRow, Callable[[], bool]] | None:
        """An append after the last message of a conversation this store wrote last, judged
        on its row as written then and sent as one conditional statement
        (``Tx.append_if_unchanged``): the row it writes, and the function telling after the
        commit whether it did. None where not tried: the caller takes the locking path."""
        seen, last = self._last_rows.row(plan.cid)
        expected = plan.expected
        if (
            seen is None
            or self.ordered
            or last is None
            or last != plan.anchor
            or not 0 < len(plan.messages) <= 100
            or (expected is not None and seen.message_count != expected)
        ):
            return None
        try:
            written = self._sync_writes(
                plan, seen, [], self._sync_manager(seen, plan), lambda: plan.now
            )
        except ConvostoreError:
            return None  # the locking path raises it from the row as it is
        if written.edits or written.gone or written.changes:
            return None
        sent = tx.append_if_unchanged(seen, written.rows, written.saved, new_ids=True)
        return written.saved, sent

    def _sync_plan(  # noqa: PLR0917 - sync_messages' arguments, checked in one place
        self,
        conversation_id: object,
        messages: object,
        after: object,
        kept: object,
        user_id: object,
        metadata: object,
        at: object,
    ) -> _SyncPlan:
        limits = self.limits
        stamp = check_optional_int("at", at, minimum=0)
        plan = _SyncPlan(
            cid=check_id("conversation_id", conversation_id, limits),
            uid=check_optional_id("user_id", user_id, limits),
            anchor=check_optional_id("after", after, limits),
            expected=_kept(kept, after),
            stamp=stamp,
            now=self.clock() if stamp is None else stamp,
            patch=self._sync_patch(metadata),
            messages=[],
        )
        plan.messages.extend(self._sync_rows(messages, plan.now))
        return plan

    def _sync_patch(self, metadata: object) -> dict[str, Any]:
        """``sync_messages``' metadata patch, with ``managedBy`` on a component's store."""
        if metadata is not None and not isinstance(metadata, Mapping):
            raise MemoryValidationError(
                f"metadata must be a dict, got {type(metadata).__name__}", argument="metadata"
            )
        patch = dict(metadata or {})
        if self.component is None:
            check_unmanaged(patch, "metadata")
        elif MANAGED_BY_KEY in patch:
            own = patch[MANAGED_BY_KEY]
            if not isinstance(own, Mapping):
                raise MemoryValidationError(
                    f"metadata[{MANAGED_BY_KEY!r}] must be a dict", argument="metadata"
                )
            patch[MANAGED_BY_KEY] = {**own, "component": self.component}
        encode_metadata(patch, self.limits)
        return patch

    def _sync_rows(self, messages: object, now: int) -> list[MessageRow]:
        """``sync_messages``' messages, validated: each with its own id, no id twice."""
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise MemoryValidationError(
                "messages must be a list of message dicts", argument="messages"
            )
        prepared: list[MessageRow] = []
        for i, item in enumerate(messages):
            try:
                row = self._prepare(item, now, "", timed=False)
            except MemoryValidationError as exc:
                raise exc.in_batch("messages", i) from None
            if not row.id:
                raise MemoryValidationError(
                    f"messages[{i}].message_id is required (sync_messages matches by id)",
                    argument="message_id",
                    index=i,
                    label=f"messages[{i}].message_id",
                )
            prepared.append(row)
        if len({m.id for m in prepared}) != len(prepared):
            raise MemoryValidationError(
                "messages: two messages have the same message_id", argument="messages"
            )
        return prepared

    def _sync_rows_held(
        self, tx: Tx, plan: _SyncPlan, when: int, head: _Head | None
    ) -> tuple[ConversationRow, list[MessageRow], str | None]:
        """``sync_messages``' reads, checked: the conversation (locked, created if needed),
        its messages after the anchor and the component managing it. One statement when the anchor is its last message
        (an append: the common case)."""
        cid, anchor = plan.cid, plan.anchor
        check = _few_ids(plan)
        few = bool(check) or (anchor is not None and not plan.messages)
        row, start, last, held = (head or tx.sync_head(cid, anchor, check))()
        if row is None:  # created here, or by a concurrent writer just now: read again
            if anchor is not None:  # checked before writing anything
                raise ConflictError(f"after: no message {anchor!r} in conversation {cid!r}")
            quota = self.limits.max_messages_per_conversation
            if len(plan.messages) > quota:
                raise MemoryQuotaExceededError(
                    f"conversation_id {cid!r} would hold {len(plan.messages)} messages, past"
                    f" the limit of {quota} messages per conversation"
                )
            self._lock_or_create(tx, cid, plan.uid, when)
            row, start, last, held = tx.sync_head(cid, anchor, check)()
            assert row is not None
        manager = self._sync_manager(row, plan)
        if anchor is not None and start is None:
            raise ConflictError(f"after: no message {anchor!r} in conversation {cid!r}")
        old: list[MessageRow] = []
        if anchor is None or last != start:
            old = tx.page_messages(
                cid, after_seq=start or 0, before_seq=None, newest_first=False, limit=None
            )
        if plan.expected is not None and row.message_count - len(old) != plan.expected:
            raise ConflictError(
                f"kept: conversation {cid!r} holds {row.message_count - len(old)} messages"
                f" up to {anchor!r}, not {plan.expected}"
            )
        if anchor is not None and (held or not few):
            _no_clash(tx, cid, anchor, plan.messages, {m.id for m in old})
        return row, old, manager

    def _sync_manager(self, row: ConversationRow, plan: _SyncPlan) -> str | None:
        """The component managing the conversation ``row``, once ``sync_messages`` may
        write it (its owner, and a component's conversation only by that component)."""
        self._owned(row, plan.uid)
        manager = manager_of(row.metadata)
        if self.component is not None and row.message_count and manager is None:
            raise ConversationExistsError(
                f"conversation_id {row.id!r} holds messages {self.component!r} does not manage"
            )
        if manager is not None and manager != self.component:
            self._writable(row)  # raises
        return manager

    def _sync(self, tx: Tx, *, plan: _SyncPlan, head: _Head | None = None) -> ConversationRow:
        """The transaction of ``sync_messages``: one round trip of reads, then the writes."""
        cid = plan.cid
        row, old, manager = self._sync_rows_held(tx, plan, plan.now, head)
        ticked = self.ordered and plan.stamp is None
        written = self._sync_writes(
            plan, row, old, manager, lambda: tx.tick(plan.now) if ticked else plan.now
        )
        tx.delete_messages(cid, [m.id for m in written.gone])
        for m in written.edits:
            tx.update_message(cid, m)
        tx.insert_changes(cid, written.changes)
        if written.saved != row:
            tx.append_and_save(cid, written.rows, written.saved)
        return written.saved

    def _sync_writes(
        self,
        plan: _SyncPlan,
        row: ConversationRow,
        old: list[MessageRow],
        manager: str | None,
        clock: Callable[[], int],
    ) -> _SyncWrites:
        """What ``sync_messages`` writes on the conversation ``row`` whose messages after the
        anchor are ``old``, at the time ``clock()`` gives once every rule passed (the quota
        is checked first: the clock of an ``ordered`` store writes)."""
        cid = plan.cid
        edits, gone, added = _tail_plan(old, plan.messages, plan.now)
        count = row.message_count - len(gone) + len(added)
        quota = self.limits.max_messages_per_conversation
        if len(added) > len(gone) and count > quota:
            raise MemoryQuotaExceededError(
                f"conversation_id {cid!r} would hold {count} messages, past the limit of"
                f" {quota} messages per conversation"
            )
        when = clock()
        seq = row.next_seq
        changes = [ChangeRow(seq + i, "message.deleted", m.id, when) for i, m in enumerate(gone)]
        seq += len(gone)
        changes += [ChangeRow(seq + i, "message.updated", m.id, when) for i, m in enumerate(edits)]
        seq += len(edits)
        rows = [m._replace(seq=seq + i, created_at=when) for i, m in enumerate(added)]
        seq += len(added)
        metadata = row.metadata
        patch = plan.patch
        if self.component is not None and manager != self.component:  # adopted here
            patch = {
                **patch,
                MANAGED_BY_KEY: {**patch.get(MANAGED_BY_KEY, {}), "component": self.component},
            }
        if patch:
            merged = merge_metadata(row.metadata, patch, self.limits)
            if merged != row.metadata and decode_json(merged) != decode_json(row.metadata):
                metadata = merged
                changes.append(ChangeRow(seq, "conversation.updated", None, when))
                seq += 1
        moved = bool(gone or edits or added)
        saved = row._replace(
            user_id=row.user_id or plan.uid,
            message_count=count,
            next_seq=seq,
            metadata=metadata,
            last_message_at=max(row.last_message_at, when) if moved else row.last_message_at,
        )
        return _SyncWrites(saved, rows, edits, gone, changes)
