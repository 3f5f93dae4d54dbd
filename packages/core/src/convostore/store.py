"""``ConversationStore`` (blocking) and ``AsyncConversationStore`` over one engine.

Every business rule (validation, limits, ids, cursors, ownership, merge, quota) is written here
once; the backends run SQL, and the async facade runs these same methods on worker threads.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import functools
import importlib.metadata
import json
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    NamedTuple,
    ParamSpec,
    Self,
    TypedDict,
    TypeVar,
)

from . import convert
from ._recent import Recent
from .backends import (
    DEFAULT_URL,
    Backend,
    ChangeRow,
    ConversationRow,
    MessageRow,
    Tx,
    open_backend,
)
from .components import CORE, component_named
from .conventions import (
    FORKED_FROM_KEY,
    MANAGED_BY_KEY,
    MEMORY_STORES_KEY,
    SUMMARY_KEY,
    UNTIL_KEY,
)
from .errors import (
    ConflictError,
    ConversationExistsError,
    ConversationManagedError,
    ConversationNotFoundError,
    ConversationOwnershipError,
    ConvostoreError,
    MemoryQuotaExceededError,
    MemoryStoreNotFoundError,
    MemoryValidationError,
    MessageIdConflictError,
    MessageNotFoundError,
)
from .ids import new_ids, now_ms
from .memory_stores import MemoryStoreMethods, _LastMemoryRows
from .models import (
    ChangeKind,
    ConversationChange,
    ConversationChanges,
    ConversationMeta,
    ListConversationsResult,
    Message,
    Order,
    Role,
)
from .threads import run_in_thread, run_sync
from .validation import (
    MAX_INT64,
    Limits,
    check_cursors,
    check_id,
    check_int,
    check_last,
    check_limit,
    check_optional_id,
    check_optional_int,
    check_order,
    check_owner,
    check_role,
    decode_json,
    encode_content,
    encode_metadata,
    preview,
)

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

P = ParamSpec("P")
R = TypeVar("R")


Fold = Callable[[dict[str, Any] | None, list[Message]], Mapping[str, Any] | None]
"""``fold(metadata, added) -> patch``: see ``ConversationStore.append_messages``."""


class MessageInput(TypedDict, total=False):
    """One message of an ``append_messages`` batch; ``role`` and ``content`` are required."""

    role: Role
    content: Any
    metadata: dict[str, Any] | None
    message_id: str | None
    created_at: int


def _message(row: MessageRow) -> Message:
    return Message.model_construct(
        message_id=row.id,
        role=row.role,
        content=json.loads(row.content),
        created_at=row.created_at,
        metadata=decode_json(row.metadata),
        updated_at=row.updated_at,
    )


def _meta(row: ConversationRow) -> ConversationMeta:
    return ConversationMeta.model_construct(
        conversation_id=row.id,
        created_at=row.created_at,
        last_message_at=row.last_message_at,
        message_count=row.message_count,
        metadata=decode_json(row.metadata),
        user_id=row.user_id,
    )


def _merge_metadata(current: str | None, patch: Mapping[str, Any], limits: Limits) -> str | None:
    """Shallow-merge ``patch`` into stored metadata; a None value deletes its key."""
    if not isinstance(patch, Mapping):
        raise MemoryValidationError(f"fold must return a dict or None, got {type(patch).__name__}")
    merged = {**(decode_json(current) or {}), **patch}
    return encode_metadata({k: v for k, v in merged.items() if v is not None}, limits)


def _attached(metadata: str | dict[str, Any] | None) -> list[str]:
    """The attached memory store ids in (encoded or decoded) conversation metadata."""
    decoded: dict[str, Any] = (
        decode_json(metadata) if isinstance(metadata, str) else metadata
    ) or {}
    ids = decoded.get(MEMORY_STORES_KEY)
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def _changed(
    tx: Tx, row: ConversationRow, kind: ChangeKind, now: int, message_id: str | None = None
) -> ConversationRow:
    """Record a change of the conversation other than an append (those are their messages'
    rows) at its next sequence number; ``row`` with that number taken, to be saved."""
    tx.insert_change(row.id, ChangeRow(row.next_seq, kind, message_id, now))
    return row._replace(next_seq=row.next_seq + 1)


_MANAGED_MARK = f'"{MANAGED_BY_KEY}"'


def manager_of(metadata: str | Mapping[str, Any] | None) -> str | None:
    """The component that manages a conversation, from its (encoded or decoded) metadata."""
    decoded: Any = metadata
    if isinstance(metadata, str):
        if _MANAGED_MARK not in metadata:  # no decoding on the common path
            return None
        decoded = decode_json(metadata)
    managed = decoded.get(MANAGED_BY_KEY) if isinstance(decoded, Mapping) else None
    name = managed.get("component") if isinstance(managed, Mapping) else None
    return name if isinstance(name, str) else None


def _unmanaged(metadata: Mapping[str, Any] | None, argument: str) -> None:
    """A caller's metadata patch may not name a managing component: ``sync_messages`` on the
    component's store sets it."""
    if metadata and MANAGED_BY_KEY in metadata:
        raise MemoryValidationError(
            f"{argument}: {MANAGED_BY_KEY!r} is set by the component that manages the"
            " conversation (ConversationStore.as_component(...).sync_messages)",
            argument=argument,
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
        last_rows: _LastRows | None,
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
        if self._sent is not None and not self._sent():
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


def _encode_cursor(row: ConversationRow) -> str:
    raw = json.dumps([row.last_message_at, row.id], ensure_ascii=False).encode()
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


VIEWS_GROUP = "convostore.views"
"""The entry-point group under which adapter packages register framework entry points."""


@functools.cache
def _registered() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=VIEWS_GROUP)}


class _View:
    """A documented framework entry point (``store.langgraph_checkpointer``...): resolved through
    the adapter's registration, so the core never imports an adapter by name."""

    def __init__(self, dist: str, doc: str) -> None:
        self.dist = dist
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, store: _Views | None, owner: type | None = None) -> Any:
        if store is None:
            return self
        return store.view(self.name, dist=self.dist)


class _Views:
    """What both facades offer beyond storage: converters and framework entry points."""

    _views: dict[str, Any]

    to_anthropic_messages = staticmethod(convert.to_anthropic_messages)
    to_anthropic_system = staticmethod(convert.to_anthropic_system)
    to_openai_input = staticmethod(convert.to_openai_input)

    def view(self, name: str, *, dist: str | None = None) -> Any:
        """The framework entry point ``name`` that an installed adapter package registers
        (entry-point group ``convostore.views``), made once per store; ``dist`` names the
        package to suggest when none does."""
        try:
            return self._views[name]
        except KeyError:
            pass
        entry = _registered().get(name)
        if entry is None:
            hint = f"the {dist} package: pip install {dist}" if dist else "an adapter package"
            raise ImportError(f"{name} needs {hint} (no installed package registers it)")
        made = self._views[name] = entry.load()(self)
        return made

    langgraph_checkpointer = _View(
        "convostore-langgraph",
        "A LangGraph ``BaseCheckpointSaver`` on this store, the same object on every access"
        " (``pip install convostore-langgraph``).",
    )
    langgraph_store = _View(
        "convostore-langgraph",
        "A LangGraph ``BaseStore`` on this store, the same object on every access"
        " (``pip install convostore-langgraph``).",
    )
    openai_session = _View(
        "convostore-openai",
        "``openai_session(conversation_id, *, max_items=None, **options)``: an OpenAI Agents"
        " ``Session`` over a conversation (``pip install convostore-openai``).",
    )
    claude_session_store = _View(
        "convostore-claude",
        "``claude_session_store(**options)``: a Claude Agent SDK ``SessionStore``"
        " (``pip install convostore-claude``).",
    )
    crewai_memory = _View(
        "convostore-crewai",
        "``crewai_memory(**options)``: a ``crewai.Memory`` whose storage is this store"
        " (``pip install convostore-crewai``).",
    )


class _LastRows(Recent[tuple[ConversationRow, str | None]]):
    """Conversations' rows as this process last wrote them, with the id of their last
    message then (None where not known), the newest 1,024, each with at most 8 KiB of
    metadata (so at most a few megabytes): what a conditional append compares with."""

    max_metadata = 8192

    def row(self, cid: str) -> tuple[ConversationRow | None, str | None]:
        found = self.get(cid)
        return (None, None) if found is None else found

    def remember(self, row: ConversationRow, last_message_id: str | None) -> None:
        if row.metadata is not None and len(row.metadata) > self.max_metadata:
            self.forget(row.id)  # big metadata: the locking path, which does not send it
        else:
            self.put(row.id, (row, last_message_id))


class ConversationStore(_Views, MemoryStoreMethods):
    """A conversation store. ``ConversationStore()`` opens the SQLite default.

    ``url`` is ``sqlite:///file.db`` (default ``$CONVOSTORE_URL`` or ``convostore.db`` in the
    working directory), ``postgresql://...`` or ``memory://``; ``pool`` is an open
    ``psycopg_pool.ConnectionPool`` to use instead of a URL.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._views = {}
        self._last_rows = _LastRows()  # shared with this store's twins (same database)
        self._last_memory = _LastMemoryRows()
        self.ordered = False
        self.strict_ownership = False
        self.component: str | None = None
        self.url = url or os.environ.get("CONVOSTORE_URL") or DEFAULT_URL
        self.limits = limits or Limits()
        self.clock = clock
        self.backend: Backend = open_backend(self.url, pool)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connections."""
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def vacuum(self) -> None:
        """Rewrite the store's tables without what deleted, cleared or redacted data left
        behind. On SQLite erased rows are already overwritten (``secure_delete``): this also
        shrinks the file. On PostgreSQL deleted rows stay in the table files as dead tuples
        until this runs ``VACUUM FULL`` (which locks each table while it rewrites it); the
        server's write-ahead log and backups keep older copies until they are recycled."""
        self.backend.vacuum([table.name for table in CORE.tables])

    def with_limits(self, **changes: int) -> Self:
        """This store with some ``Limits`` fields changed, on the same database connections:
        for data with other bounds than chat messages (closing either closes both)."""
        twin = copy.copy(self)
        twin.limits = dataclasses.replace(self.limits, **changes)
        twin._views = {}  # views are bound to the store they were made on
        return twin

    def with_strict_ownership(self) -> Self:
        """This store (same connections) whose calls given a ``user_id`` use only what that
        user owns: an unowned conversation or memory store is refused as another user's is
        (and an append cannot claim it). For servers that act for many users."""
        twin = self.with_limits()
        twin.strict_ownership = True
        return twin

    def as_component(self, name: str) -> Self:
        """This store (same connections) acting for the component ``name`` (a registered
        ``Component``'s name, ``convostore-langgraph``): its ``sync_messages`` marks the
        conversations it fills as managed by ``name`` (``managedBy`` in their metadata), and
        it may write their messages. Every other caller's message writes to a managed
        conversation raise ``ConversationManagedError``."""
        twin = self.with_limits()
        twin.component = check_id("name", name, self.limits)
        return twin

    def with_ordered_clock(self) -> Self:
        """This store (same connections) whose appends take their time from one clock that the
        whole database shares: ``created_at`` and ``last_message_at`` then increase strictly
        in commit order across all conversations, threads, processes and machines (a burst
        runs ahead of the wall clock by one millisecond per append). It serializes appends on
        one row, so use it where the order of writes is the point (session listings)."""
        twin = self.with_limits()
        twin.ordered = True
        return twin

    # -- messages --------------------------------------------------------------------------

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
            if self.backend.closed:
                raise ConvostoreError("the store is closed")
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

        if self._append_unchanged(
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
                patch = fold(decode_json(row.metadata), [_message(m) for m in new])
                if patch:
                    merged = _merge_metadata(row.metadata, patch, limits)
                    appended = _changed(tx, appended, "conversation.updated", at)
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
        quota = self.limits.max_messages_per_conversation
        if row.message_count + len(new) > quota:
            raise MemoryQuotaExceededError(
                f"conversation_id {row.id!r} holds {row.message_count} messages; appending"
                f" {len(new)} would pass the limit of {quota} messages per conversation"
            )
        placed = [
            m._replace(seq=row.next_seq + i, created_at=times.get(m.id, at))
            for i, m in enumerate(new)
        ]
        return placed, row._replace(
            user_id=row.user_id or user_id,
            last_message_at=max(row.last_message_at, at),
            message_count=row.message_count + len(new),
            next_seq=row.next_seq + len(new),
        )

    def _append_unchanged(
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
        the messages stored only if the row is still exactly that (and, where the caller
        ``supplied`` ids, only if none of them is taken). False where not tried, where
        ``fold`` changes the metadata, where the row changed since or an id is taken; the
        caller then takes the locking path (which raises any error from the row as it is, and
        skips the messages already stored)."""
        seen, _ = self._last_rows.row(cid)
        if seen is None or self.ordered or len(prepared) > 100:
            return False
        try:
            rows, row = self._grown(
                self._writable(self._owned(seen, user_id)), prepared, user_id, now, times
            )
        except ConvostoreError:
            return False
        if fold is not None and fold(decode_json(seen.metadata), [_message(m) for m in rows]):
            return False
        if self.backend.write(
            lambda tx: tx.append_if_unchanged(seen, rows, row, new_ids=supplied)(),
            single_statement=True,
        ):
            self._last_rows.remember(row, rows[-1].id)
            return True
        self._last_rows.forget(cid)
        return False

    def _prepare(self, item: object, now: int, fresh_id: str, *, timed: bool = True) -> MessageRow:
        """Validate and serialize one message (``fresh_id`` unless it names its own id; its
        ``created_at`` where ``timed`` and it has one, else ``now``)."""
        if not isinstance(item, Mapping):
            raise MemoryValidationError(
                f"message must be a dict, got {type(item).__name__}", argument="message"
            )
        unknown = set(item) - {"role", "content", "metadata", "message_id"}
        if timed:
            unknown.discard("created_at")
        if unknown:
            raise MemoryValidationError(
                f"keys {sorted(unknown)} are not message fields", argument="message"
            )
        if "content" not in item:
            raise MemoryValidationError("content is required", argument="content")
        limits = self.limits
        mid = check_optional_id("message_id", item.get("message_id"), limits)
        at = check_optional_int("created_at", item.get("created_at"))
        return MessageRow(
            seq=0,
            id=mid or fresh_id,
            role=check_role(item.get("role")),
            content=encode_content(item["content"], limits),
            metadata=encode_metadata(item.get("metadata"), limits),
            created_at=now if at is None else at,
            updated_at=None,
        )

    def _owned(self, row: ConversationRow, user_id: str | None) -> ConversationRow:
        """``row``, if ``user_id`` (when given) may use it (``check_owner``)."""
        check_owner(
            row.user_id,
            user_id,
            strict=self.strict_ownership,
            what=f"conversation_id {row.id!r}",
            error=ConversationOwnershipError,
        )
        return row

    def _lock_or_create(
        self,
        tx: Tx,
        cid: str,
        user_id: str | None,
        now: int,
        locked: Callable[[], ConversationRow | None] | None = None,
    ) -> ConversationRow:
        """Lock the conversation's row (``locked``: that read, already sent), creating it first
        if needed; enforce its owner."""
        row = (
            (tx.conversation(cid, lock=True) if locked is None else locked())
            or tx.create_conversation(cid, user_id, now)
            or tx.conversation(cid, lock=True)
        )
        assert row is not None  # created, or created by a concurrent writer
        return self._owned(row, user_id)

    def _locked(self, tx: Tx, cid: str, user_id: str | None) -> ConversationRow | None:
        """Lock the conversation's row if it exists; enforce its owner."""
        row = tx.conversation(cid, lock=True)
        return None if row is None else self._owned(row, user_id)

    def _writable(self, row: ConversationRow) -> ConversationRow:
        """``row``, if this store may write its messages: a conversation a component manages
        takes message writes from that component's store only (``as_component``)."""
        manager = manager_of(row.metadata)
        if manager is not None and manager != self.component:
            raise ConversationManagedError(
                f"conversation_id {row.id!r} is managed by {manager!r}: its messages follow"
                " what that component keeps (a LangGraph thread, ...), so they are written"
                " there, not through the store"
            )
        return row

    def _delete_managed(self, tx: Tx, rows: Sequence[ConversationRow]) -> None:
        """Let each component that manages some of ``rows`` (being deleted) delete its own
        data of them, in this transaction (``Component.on_delete``)."""
        managed: dict[str, list[ConversationMeta]] = {}
        for row in rows:
            name = manager_of(row.metadata)
            if name is not None:
                managed.setdefault(name, []).append(_meta(row))
        if not managed:
            return
        present = tx.components_present()
        for name, metas in managed.items():
            component = component_named(name)
            if component is not None and component.on_delete and name in present:
                component.on_delete(tx, metas)

    def _read_owned(
        self, cid: str, user_id: str | None, read: Callable[[Tx], R], *, single_statement: bool
    ) -> R | None:
        """``read`` in one snapshot, after checking that ``user_id`` (if given) may read ``cid``;
        None when ``user_id`` is given and the conversation does not exist."""
        if user_id is None:
            return self.backend.read(read, single_statement=single_statement)

        def checked(tx: Tx) -> R | None:
            row = tx.conversation(cid)
            if row is None:
                return None
            self._owned(row, user_id)
            return read(tx)

        return self.backend.read(checked)

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

        def read(tx: Tx) -> list[MessageRow]:
            after_seq = before_seq = None
            for name, cursor in (("after", after), ("before", before)):
                if cursor is not None:
                    seq = tx.seq_of(cid, cursor)
                    if seq is None:
                        raise MemoryValidationError(
                            f"{name}: no message {cursor!r} in conversation {cid!r}"
                        )
                    after_seq, before_seq = (seq, None) if name == "after" else (None, seq)
            return tx.page_messages(
                cid,
                after_seq=after_seq,
                before_seq=before_seq,
                newest_first=newest_first,
                limit=limit,
            )

        rows = (
            self._read_owned(cid, uid, read, single_statement=after is None and before is None)
            or []
        )
        if newest_first != (order == "desc"):
            rows.reverse()
        return [_message(r) for r in rows]

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
                lambda tx: tx.page_messages(
                    cid, after_seq=None, before_seq=None, newest_first=last is not None, limit=last
                ),
                single_statement=True,
            )
            or []
        )
        if last is not None:
            rows.reverse()
        return [_message(r) for r in rows]

    def get_contents(
        self, *, conversation_id: str, last: int | None = None, user_id: str | None = None
    ) -> list[Any]:
        """``get_history`` without the ``Message`` wrapping: each message's content, oldest
        first, in one read; for adapters whose stored items are the contents."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        if check_last(last) == 0:
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
            tx.save_conversation(_changed(tx, row, "message.deleted", now, newest[0].id))
            return newest[0]

        popped = self.backend.write(write)
        return None if popped is None else _message(popped)

    def get_message(
        self, *, conversation_id: str, message_id: str, user_id: str | None = None
    ) -> Message | None:
        """One message by id, or None."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        mid = check_id("message_id", message_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        row = self._read_owned(cid, uid, lambda tx: tx.message(cid, mid), single_statement=True)
        return None if row is None else _message(row)

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
            tx.save_conversation(_changed(tx, conversation, "message.updated", now, mid))
            return row

        return _message(self.backend.write(write))

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
                tx.save_conversation(_changed(tx, row, "message.deleted", now, mid))

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
                tx.save_conversation(_changed(tx, row, "messages.cleared", now))

        self.backend.write(write, erasing=True)

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
            return _meta(self._sync(tx, plan=plan))
        # Not an erasing write: what it deletes, the component still keeps (older checkpoints).
        row = self.backend.write(functools.partial(self._sync, plan=plan))
        if self.backend.conditional_append:
            self._last_rows.remember(row, plan.last_message_id)
        return _meta(row)

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
            _unmanaged(patch, "metadata")
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
            merged = _merge_metadata(row.metadata, patch, self.limits)
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

    # -- conversations ---------------------------------------------------------------------

    def get_conversation(
        self, *, conversation_id: str, user_id: str | None = None
    ) -> ConversationMeta | None:
        """The conversation's metadata, or None if it does not exist."""
        cid = check_id("conversation_id", conversation_id, self.limits)
        uid = check_optional_id("user_id", user_id, self.limits)
        row = self.backend.read(lambda tx: tx.conversation(cid), single_statement=True)
        return None if row is None else _meta(self._owned(row, uid))

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

        def read(tx: Tx) -> tuple[list[ConversationRow], bool, bool]:
            rows = tx.page_conversations(uid, bound, descending, limit + 1)
            more_ahead = len(rows) > limit
            rows = rows[:limit]
            behind = False
            if rows and bound is not None:
                key = (rows[0].last_message_at, rows[0].id)
                behind = bool(tx.page_conversations(uid, key, not descending, 1))
            return rows, more_ahead, behind

        rows, more_ahead, behind = self.backend.read(read)
        if not forward:
            rows.reverse()
            more_ahead, behind = behind, more_ahead
        return ListConversationsResult(
            items=[_meta(r) for r in rows],
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
        _unmanaged(metadata, "metadata")
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
            row = _changed(tx, row, "conversation.updated", now)._replace(
                user_id=row.user_id or uid, metadata=_merge_metadata(row.metadata, todo, limits)
            )
            tx.save_conversation(row)
            return row

        return _meta(self.backend.write(write))

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
        _unmanaged(metadata, "metadata")
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
            merged = _merge_metadata(encode_metadata(held, limits), patch, limits)
            row = row._replace(
                message_count=count,
                next_seq=last_seq + 1,
                metadata=_merge_metadata(merged, {FORKED_FROM_KEY: origin}, limits),
            )
            tx.save_conversation(row)
            return row

        return _meta(self.backend.write(write))

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

    # -- the change feed -------------------------------------------------------------------

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
                message=_message(m),
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
                    message=None if found is None else _message(found),
                )
            )
        items.sort(key=lambda change: change.seq)
        more = len(items) > limit or len(messages) == limit or len(changes) == limit
        items = items[:limit]
        cursor = items[-1].seq if more and items else row.next_seq - 1
        return ConversationChanges(items=items, cursor=cursor, conversation=_meta(row))

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
        return [_meta(r) for r in rows]

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

    def delete_user_data(self, *, user_id: str) -> int:
        """Delete every conversation of ``user_id`` with its messages, and every memory store
        of ``user_id`` with its entries and versions; return how many conversations went."""
        uid = check_id("user_id", user_id, self.limits)

        def write(tx: Tx) -> int:
            self._delete_managed(tx, tx.managed_conversations_of(uid))
            tx.delete_user_memory_stores(uid)
            return tx.delete_user(uid)

        return self.backend.write(write, erasing=True)

    # -- memory stores attached to a conversation -------------------------------------------

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
            row = _changed(tx, row, "conversation.updated", now)
            tx.save_conversation(
                row._replace(user_id=owner, metadata=_merge_metadata(row.metadata, patch, limits))
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
            row = _changed(tx, row, "conversation.updated", now)
            tx.save_conversation(
                row._replace(metadata=_merge_metadata(row.metadata, patch, limits))
            )
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


def _bounded_last(limits: Limits, kwargs: Mapping[str, Any]) -> bool:
    last = kwargs.get("last")
    return isinstance(last, int) and last <= limits.max_page_size


def _bridge(
    method: Callable[Concatenate[ConversationStore, P], R],
    inline: bool | Callable[[Limits, Mapping[str, Any]], bool] = True,
) -> Callable[Concatenate[AsyncConversationStore, P], Coroutine[Any, Any, R]]:
    """The async form of a ``ConversationStore`` method: the same call through ``run_sync``.

    ``inline`` says whether the call is small enough to try on the event loop: calls that may
    touch a whole conversation or many (unbounded reads, bulk deletes) always take a thread.
    """

    async def run(self: AsyncConversationStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = functools.partial(method, self.sync, *args, **kwargs)
        small = inline(self.sync.limits, kwargs) if callable(inline) else inline
        return await run_sync(call, self.sync.backend, inline=self.inline and small)

    functools.update_wrapper(run, method)
    return run


class AsyncConversationStore(_Views):
    """The async twin of ``ConversationStore`` (asyncio and trio): same methods, awaited.

    ``sync`` is the blocking store it runs on; both share one database connection.
    On SQLite a small call whose locks are free runs on the event loop (``run_sync``);
    ``inline=False`` sends every call to a worker thread instead.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] = now_ms,
        sync: ConversationStore | None = None,
        inline: bool = True,
    ) -> None:
        self._views = {}
        self.sync = sync or ConversationStore(url, pool=pool, limits=limits, clock=clock)
        self.inline = inline

    append_message = _bridge(ConversationStore.append_message)
    append_messages = _bridge(ConversationStore.append_messages)
    get_messages = _bridge(ConversationStore.get_messages)
    get_message = _bridge(ConversationStore.get_message)
    get_history = _bridge(ConversationStore.get_history, _bounded_last)
    get_contents = _bridge(ConversationStore.get_contents, _bounded_last)
    pop_message = _bridge(ConversationStore.pop_message)
    update_message = _bridge(ConversationStore.update_message)
    delete_message = _bridge(ConversationStore.delete_message)
    clear_messages = _bridge(ConversationStore.clear_messages, inline=False)
    sync_messages = _bridge(
        ConversationStore.sync_messages, lambda _, kwargs: kwargs.get("after") is not None
    )
    get_conversation = _bridge(ConversationStore.get_conversation)
    list_conversations = _bridge(ConversationStore.list_conversations)
    update_conversation = _bridge(ConversationStore.update_conversation)
    fork_conversation = _bridge(ConversationStore.fork_conversation, inline=False)
    delete_conversation = _bridge(ConversationStore.delete_conversation, inline=False)
    delete_user_data = _bridge(ConversationStore.delete_user_data, inline=False)
    find_conversations = _bridge(ConversationStore.find_conversations, inline=False)
    delete_conversations = _bridge(ConversationStore.delete_conversations, inline=False)
    existing_message_ids = _bridge(ConversationStore.existing_message_ids)
    get_changes = _bridge(ConversationStore.get_changes)
    enable_change_notifications = _bridge(
        ConversationStore.enable_change_notifications, inline=False
    )
    wait_for_change = _bridge(ConversationStore.wait_for_change, inline=False)
    attach_memory_stores = _bridge(ConversationStore.attach_memory_stores)
    detach_memory_stores = _bridge(ConversationStore.detach_memory_stores)
    attached_memory_stores = _bridge(ConversationStore.attached_memory_stores)
    create_memory_store = _bridge(ConversationStore.create_memory_store)
    get_memory_store = _bridge(ConversationStore.get_memory_store)
    list_memory_stores = _bridge(ConversationStore.list_memory_stores)
    delete_memory_store = _bridge(ConversationStore.delete_memory_store, inline=False)
    create_memory = _bridge(ConversationStore.create_memory)
    list_memories = _bridge(ConversationStore.list_memories)
    get_memory = _bridge(ConversationStore.get_memory)
    get_memory_by_path = _bridge(ConversationStore.get_memory_by_path)
    update_memory = _bridge(ConversationStore.update_memory)
    delete_memory = _bridge(ConversationStore.delete_memory)
    list_memory_versions = _bridge(ConversationStore.list_memory_versions)
    get_memory_version = _bridge(ConversationStore.get_memory_version)
    redact_memory_version = _bridge(ConversationStore.redact_memory_version)
    vacuum = _bridge(ConversationStore.vacuum, inline=False)

    async def aclose(self) -> None:
        """``close()`` on a worker thread."""
        await run_in_thread(self.sync.close)

    @property
    def limits(self) -> Limits:
        return self.sync.limits

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
