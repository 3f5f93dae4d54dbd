"""The engine under the store's facade: its state and the rules its concerns share."""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pydantic import BaseModel

from .backends import DEFAULT_URL, Backend, ChangeRow, ConversationRow, MessageRow, Tx, open_backend
from .backends.transfer import schema_versions
from .components import CORE, component_named
from .conventions import MANAGED_BY_KEY
from .errors import (
    ClosedError,
    ConversationManagedError,
    ConversationOwnershipError,
    MemoryValidationError,
    StorageError,
)
from .ids import now_ms
from .models import ROLES, ChangeKind, ConversationMeta, Message
from .recent import LastMemoryRows, LastRows
from .validation import (
    Limits,
    check_id,
    check_optional_id,
    check_optional_int,
    check_owner,
    check_role,
    decode_json,
    encode_content,
    encode_metadata,
    first_value,
    key_head,
    loads,
)

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


def parse_position(text: object) -> int:
    """A WAL position written as PostgreSQL writes it (``16/B374D848``), in bytes."""
    if isinstance(text, str) and len(text) <= 17 and text.count("/") == 1:
        high, low = text.split("/")
        digits = "0123456789abcdefABCDEF"
        if all(0 < len(part) <= 8 and all(c in digits for c in part) for part in (high, low)):
            return int(high, 16) << 32 | int(low, 16)
    shown = text[:40] if isinstance(text, str) else type(text).__name__
    raise MemoryValidationError(
        f"position must be a WAL position as PostgreSQL writes it ('16/B374D848'), got {shown!r}",
        argument="position",
    )


def _damaged(what: str, why: object) -> StorageError:
    """A stored row the store would not have written (by hand, by a broken tool)."""
    return StorageError(f"{what}: its stored {why}; `convostore check` lists every such row")


def _stored_metadata(what: str, text: str | None) -> dict[str, Any] | None:
    try:
        metadata = decode_json(text)
    except ValueError as exc:
        raise _damaged(what, f"metadata is not valid JSON ({exc})") from None
    if metadata is not None and not isinstance(metadata, dict):
        raise _damaged(what, f"metadata is a JSON {type(metadata).__name__}, not an object")
    return metadata


# The read path builds its models without pydantic's validator where a row is as the store
# writes it (its types checked here, its JSON decoded): ``messages_of`` and ``metas_of`` set
# what the validator would set (every field given, all of them in the fields set), at about
# half its cost. Any other row goes through the validator, and a row the store would not have
# written (by hand, by a broken tool) is named rather than handed out: read again slowly, for
# an error that says what is wrong with it.

_new = object.__new__
_set = object.__setattr__
_ROLES = frozenset(ROLES)
_MESSAGE_KEYS = frozenset(("role", "content", "metadata", "message_id"))
_TIMED_KEYS = _MESSAGE_KEYS | {"created_at"}
_MESSAGE_FIELDS = frozenset(Message.model_fields)
_META_FIELDS = frozenset(ConversationMeta.model_fields)


# The models' validators, called directly: ``model_validate`` adds a call and its keyword
# arguments to each row.
_message: Callable[[dict[str, Any]], Message] = Message.__pydantic_validator__.validate_python
_meta: Callable[[dict[str, Any]], ConversationMeta] = (
    ConversationMeta.__pydantic_validator__.validate_python
)


def message_of(row: Sequence[Any]) -> Message:
    """The message of a ``MessageRow`` (or of the plain tuple a query returns in its order)."""
    return messages_of((row,))[0]


def _filled(model: type[M], names: frozenset[str], fields: dict[str, Any]) -> M:
    """A ``model`` holding ``fields`` (every field, each of its type: checked by the caller)
    as pydantic's validator leaves one, without running it."""
    built = _new(model)
    _set(built, "__dict__", fields)
    _set(built, "__pydantic_fields_set__", set(names))
    _set(built, "__pydantic_extra__", None)
    _set(built, "__pydantic_private__", None)
    return built


def messages_of(rows: Iterable[Sequence[Any]]) -> list[Message]:
    """``message_of`` each row, in one loop (a page's rows)."""
    messages = []
    for row in rows:
        _, mid, role, content, metadata, created_at, updated_at = row
        if (
            type(mid) is str
            and role in _ROLES
            and type(content) is str
            and type(created_at) is int
            and (updated_at is None or type(updated_at) is int)
        ):
            try:
                value = loads(content)
                extra = None if metadata is None else loads(metadata)
            except (ValueError, TypeError):
                extra = ()  # named below
            if extra is None or type(extra) is dict:
                fields = {
                    "message_id": mid,
                    "role": role,
                    "content": value,
                    "created_at": created_at,
                    "metadata": extra,
                    "updated_at": updated_at,
                }
                messages.append(_filled(Message, _MESSAGE_FIELDS, fields))
                continue
        messages.append(_validated_message(MessageRow(*row)))
    return messages


def _validated_message(row: MessageRow) -> Message:
    try:
        return _message(
            {
                "message_id": row.id,
                "role": row.role,
                "content": loads(row.content),
                "created_at": row.created_at,
                "metadata": None if row.metadata is None else loads(row.metadata),
                "updated_at": row.updated_at,
            }
        )
    except ValueError as exc:  # json's and pydantic's errors both are
        error = exc
    what = f"message {row.id!r}"
    try:
        loads(row.content)
    except ValueError as exc:
        raise _damaged(what, f"content is not valid JSON ({exc})") from None
    metadata = _stored_metadata(what, row.metadata)
    if row.role not in ROLES:  # shown as stored (`convostore check` names it)
        return Message.model_construct(
            message_id=row.id,
            role=row.role,
            content=loads(row.content),
            created_at=row.created_at,
            metadata=metadata,
            updated_at=row.updated_at,
        )
    raise _damaged(what, f"row is not a message ({error})")


def meta_of(row: Sequence[Any]) -> ConversationMeta:
    """The metadata of a ``ConversationRow`` (or of the plain tuple a query returns)."""
    return metas_of((row,))[0]


def metas_of(rows: Iterable[Sequence[Any]]) -> list[ConversationMeta]:
    """``meta_of`` each row, in one loop (as ``messages_of``)."""
    metas = []
    for row in rows:
        cid, user_id, created_at, last_message_at, message_count, _, metadata = row
        if (
            type(cid) is str
            and (user_id is None or type(user_id) is str)
            and type(created_at) is int
            and type(last_message_at) is int
            and type(message_count) is int
        ):
            try:
                extra = None if metadata is None else loads(metadata)
            except (ValueError, TypeError):
                extra = ()  # named below
            if extra is None or type(extra) is dict:
                fields = {
                    "conversation_id": cid,
                    "created_at": created_at,
                    "last_message_at": last_message_at,
                    "message_count": message_count,
                    "metadata": extra,
                    "user_id": user_id,
                }
                metas.append(_filled(ConversationMeta, _META_FIELDS, fields))
                continue
        metas.append(_validated_meta(ConversationRow(*row)))
    return metas


def briefs_of(
    rows: Iterable[Sequence[Any]], key: str | None = None
) -> list[tuple[str, int, int, Any]]:
    """The (id, last_message_at, message_count, metadata) rows of ``Tx.briefs_by_prefix``
    with the metadata decoded, or with ``key`` only its value (None when absent: the rest
    is not decoded where ``key`` comes first); a row the store would not have written is
    named, as ``metas_of`` names it."""
    head = None if key is None else key_head(key)
    briefs: list[tuple[str, int, int, Any]] = []
    for row in rows:
        cid, last_message_at, message_count, metadata = row
        if type(last_message_at) is int and type(message_count) is int:
            if metadata is None:
                briefs.append(row)  # type: ignore[arg-type]  # the types just checked
                continue
            if head is not None and type(metadata) is str:
                found, value = first_value(metadata, head)
                if found:
                    briefs.append((cid, last_message_at, message_count, value))
                    continue
            try:
                extra = loads(metadata)
            except (ValueError, TypeError):
                extra = None
            if type(extra) is dict:
                value = extra if key is None else extra.get(key)
                briefs.append((cid, last_message_at, message_count, value))
                continue
        what = f"conversation {cid!r}"
        _stored_metadata(what, metadata)
        raise _damaged(what, "row is not a conversation (its time or count is not an integer)")
    return briefs


def _validated_meta(row: ConversationRow) -> ConversationMeta:
    try:
        return _meta(
            {
                "conversation_id": row.id,
                "created_at": row.created_at,
                "last_message_at": row.last_message_at,
                "message_count": row.message_count,
                "metadata": None if row.metadata is None else loads(row.metadata),
                "user_id": row.user_id,
            }
        )
    except ValueError as exc:
        what = f"conversation {row.id!r}"
        _stored_metadata(what, row.metadata)
        raise _damaged(what, f"row is not a conversation ({exc})") from None


def merge_metadata(current: str | None, patch: Mapping[str, Any], limits: Limits) -> str | None:
    """Shallow-merge ``patch`` into stored metadata; a None value deletes its key."""
    if not isinstance(patch, Mapping):
        raise MemoryValidationError(f"fold must return a dict or None, got {type(patch).__name__}")
    merged = {**(decode_json(current) or {}), **patch}
    return encode_metadata({k: v for k, v in merged.items() if v is not None}, limits)


def changed(
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


def check_unmanaged(metadata: Mapping[str, Any] | None, argument: str) -> None:
    """A caller's metadata patch may not name a managing component: ``sync_messages`` on the
    component's store sets it."""
    if metadata and MANAGED_BY_KEY in metadata:
        raise MemoryValidationError(
            f"{argument}: {MANAGED_BY_KEY!r} is set by the component that manages the"
            " conversation (ConversationStore.as_component(...).sync_messages)",
            argument=argument,
        )


class Engine:
    """A store's state (its database, limits, clock and flags, shared with its twins) and the
    rules several of its concerns apply: who may use a conversation, locking or creating it,
    which component manages it, what a valid message is. ``ConversationStore`` is made of this
    and one class per concern."""

    _views: dict[str, Any]

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        limits: Limits | None = None,
        clock: Callable[[], int] = now_ms,
        replicas: Sequence[str] | None = None,
        max_replica_lag: float | None = None,
    ) -> None:
        self._views = {}
        self._last_rows = LastRows()  # shared with this store's twins (same database)
        self._last_memory = LastMemoryRows()
        self.ordered = False
        self.strict_ownership = False
        self.component: str | None = None
        self.url = url or os.environ.get("CONVOSTORE_URL") or DEFAULT_URL
        self.limits = limits or Limits()
        self.clock = clock
        self.backend: Backend = open_backend(self.url, pool, replicas, max_replica_lag)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connections."""
        self.backend.close()

    def ready(self) -> bool:
        """Whether the store can serve now: the database answers a read and holds the core's
        tables at this install's version (not older, nor migrated by a newer install). For
        readiness probes: a database that fails is False, not an error."""
        try:
            versions = self.backend.read(schema_versions, single_statement=True)
        except (StorageError, ClosedError):
            return False
        return versions.get(CORE.name) == CORE.version

    def _check_open(self) -> None:
        """For a call that reads nothing: closed, it says so as every other call does."""
        if self.backend.closed:
            raise ClosedError("the store is closed")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def replica_position(self) -> str | None:
        """With read replicas (``replicas=``): the primary's WAL position (``'0/16B3748'``)
        that this process's reads see at least, its last write's or one given to
        ``read_after``; None without replicas. Hand it to another process (a response
        header) whose reads must then see this process's writes."""
        position = self.backend.position()
        return None if position is None else f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"

    def read_after(self, position: str) -> None:
        """Make this process's later reads see the primary's writes up to ``position`` (from
        another process's ``replica_position()``): a replica that has not replayed them does
        not answer. Without replicas every read sees them already. A malformed position, or
        one the primary has not reached, is a ``MemoryValidationError``."""
        self._check_open()
        self.backend.follow(parse_position(position))

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

    def on_primary(self) -> Self:
        """This store (same connections) whose reads go to the primary too, with read replicas
        (``replicas=``): for a read that decides a write (a read-modify-write on a version),
        which a standby behind another process's write would answer with the version that
        write replaced. Without replicas, every read is on the primary already: this store."""
        backend = self.backend.on_primary()
        if backend is self.backend:
            return self
        twin = self.with_limits()
        twin.backend = backend
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

    def _prepare(self, item: object, now: int, fresh_id: str, *, timed: bool = True) -> MessageRow:
        """Validate and serialize one message (``fresh_id`` unless it names its own id; its
        ``created_at`` where ``timed`` and it has one, else ``now``)."""
        if type(item) is not dict and not isinstance(item, Mapping):
            raise MemoryValidationError(
                f"message must be a dict, got {type(item).__name__}", argument="message"
            )
        unknown = item.keys() - (_TIMED_KEYS if timed else _MESSAGE_KEYS)
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
            0,  # seq, given where it is placed
            mid or fresh_id,
            check_role(item.get("role")),
            encode_content(item["content"], limits),
            encode_metadata(item.get("metadata"), limits),
            now if at is None else at,
            None,  # updated_at
        )

    def _owned(self, row: ConversationRow, user_id: str | None) -> ConversationRow:
        """``row``, if ``user_id`` (when given) may use it (``check_owner``)."""
        self._check_owner(row.id, row.user_id, user_id)
        return row

    def _check_owner(self, cid: str, owner: str | None, user_id: str | None) -> None:
        """Refuse ``user_id`` (when given) conversation ``cid`` of ``owner`` (``check_owner``)."""
        check_owner(
            owner,
            user_id,
            strict=self.strict_ownership,
            what=f"conversation_id {cid!r}",
            error=ConversationOwnershipError,
        )

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
                managed.setdefault(name, []).append(meta_of(row))
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
