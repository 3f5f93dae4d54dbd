"""``create_app``: the HTTP side of a convostore store, as a FastAPI (ASGI) app.

Each endpoint calls one method of the core's ``AsyncConversationStore`` and passes the caller's
``user_id`` to it, so ownership is enforced by the core call itself; every rule (limits,
cursors, ownership, merge, quota) is the core's.
"""

import inspect
import ipaddress
import json
import logging
import re
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias

from convostore import (
    AsyncConversationStore,
    ConversationChange,
    ConversationChanges,
    ConversationMeta,
    ConversationStore,
    ConvostoreError,
    ListConversationsResult,
    ListMemoriesResult,
    ListMemoryStoresResult,
    ListMemoryVersionsResult,
    MemoryEntry,
    MemoryStore,
    MemoryValidationError,
    MemoryVersion,
    Message,
    Order,
    Role,
)
from fastapi import APIRouter, Body, Depends, FastAPI, Header, Path, Query
from fastapi.security import HTTPBearer
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter
from pydantic.alias_generators import to_camel
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import RedirectResponse, Response

from .auth import Authenticator, Principal, TokenTable
from .errors import ApiError, ErrorBody, dump_json, install_error_handlers, not_found, path_value
from .events import ChangeHub
from .middleware import DeclaredSizeLimit, EncodedSlashes
from .webview import web_app

log = logging.getLogger("convostore_server")

StoreArg: TypeAlias = ConversationStore | AsyncConversationStore | str | None

# -- request and response bodies (the core's models are the responses) ------------------------

Content: TypeAlias = str | list[Any] | dict[str, Any]


class _In(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class NewMessage(_In):
    """A message to append; ``messageId`` makes a retry safe (the same id and message are
    stored once)."""

    role: Role
    content: Content
    metadata: dict[str, Any] | None = None
    message_id: str | None = None


class NewMessages(_In):
    """A batch of messages, appended atomically (all or none)."""

    messages: list[NewMessage]


def _one_or_batch(body: Any) -> str:
    return "batch" if isinstance(body, dict) and "messages" in body else "message"


NewMessageOrBatch = Annotated[
    Annotated[NewMessage, Tag("message")] | Annotated[NewMessages, Tag("batch")],
    Discriminator(_one_or_batch),
]


class MessagePatch(_In):
    """What to overwrite in a message: ``content``, ``metadata`` (replaced, not merged) or both."""

    content: Content | None = None
    metadata: dict[str, Any] | None = None


class ConversationPatch(_In):
    """A shallow merge into the conversation's metadata: a ``null`` value deletes its key."""

    metadata: dict[str, Any]


class NewMemoryStore(_In):
    name: str
    description: str | None = None
    metadata: dict[str, Any] | None = None


class NewMemory(_In):
    path: str = Field(description="A relative path: notes/2026/05/daily.md")
    content: str


class MemoryUpdate(_In):
    """A new version of the entry, written only if ``version`` is its current version (else
    409 with ``currentVersion``); ``path`` moves it, ``content`` null keeps its content."""

    content: str | None = None
    version: int
    path: str | None = None


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Appended(_Out):
    message_id: str


class AppendedBatch(_Out):
    message_ids: list[str]


class Me(_Out):
    """Who the request's credentials are for: a user (``userId``) or an admin."""

    user_id: str | None = None
    admin: bool


# -- who is calling ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Caller:
    """A request's principal, the ``user_id`` every core call gets, and the store to call."""

    principal: Principal
    user_id: str | None
    store: AsyncConversationStore


def _loopback(connection: HTTPConnection) -> bool:
    host = connection.client.host if connection.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Context:
    """What the endpoints share: the stores and how to authenticate."""

    def __init__(self, store: AsyncConversationStore, auth: Authenticator | None) -> None:
        self.store = store
        # Calls made for a user: strict, so an unowned conversation or memory store (an
        # agent's) is refused as another user's is; an admin's calls use `store`.
        self.scoped = AsyncConversationStore(
            sync=store.sync.with_strict_ownership(), inline=store.inline
        )
        self.auth = auth

    async def principal(self, connection: HTTPConnection) -> Principal:
        if self.auth is None:  # no authentication: local use only
            if not _loopback(connection):
                raise ApiError(
                    403, "forbidden", "this server runs without authentication: loopback only"
                )
            return Principal(admin=True)
        found = self.auth(connection)
        if inspect.isawaitable(found):
            found = await found
        if found is None:
            raise ApiError(401, "unauthenticated", "a valid bearer token is required")
        if not isinstance(found, Principal):
            raise TypeError(f"auth must return a Principal or None, got {type(found).__name__}")
        return found

    def caller(self, principal: Principal, as_user: str | None) -> Caller:
        if principal.admin:
            user_id = as_user
        else:
            if as_user is not None and as_user != principal.user_id:
                raise ApiError(
                    403, "forbidden", "userId: a user acts only as themself", argument="userId"
                )
            user_id = principal.user_id
        return Caller(principal, user_id, self.store if user_id is None else self.scoped)


# -- the app -----------------------------------------------------------------------------------

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what}
    for status, what in {
        400: "Bad input (`invalid_argument`, `invalid_request`)",
        401: "No valid bearer token (`unauthenticated`)",
        403: "Not allowed for this principal (`forbidden`)",
        404: "Not found, or another user's (`not_found`)",
        409: "A conflict (`message_id_conflict`, `version_conflict`, `path_conflict`) or a"
        " quota (`quota_exceeded`)",
        413: "Over a size limit (`too_large`)",
        422: "The request does not match its schema (`invalid_request`)",
        503: "The database failed (`storage_unavailable`)",
    }.items()
}


def _json(value: Any, adapter: TypeAdapter[Any], status: int = 200) -> Response:
    return Response(dump_json(value, adapter), status_code=status, media_type="application/json")


_MESSAGE = TypeAdapter(Message)
_MESSAGES = TypeAdapter(list[Message])
_META = TypeAdapter(ConversationMeta)
_CONVERSATIONS = TypeAdapter(ListConversationsResult)
_APPENDED = TypeAdapter(Appended)
_APPENDED_BATCH = TypeAdapter(AppendedBatch)
_STORE = TypeAdapter(MemoryStore)
_STORES = TypeAdapter(ListMemoryStoresResult)
_ENTRY = TypeAdapter(MemoryEntry)
_ENTRIES = TypeAdapter(ListMemoriesResult)
_VERSION = TypeAdapter(MemoryVersion)
_VERSIONS = TypeAdapter(ListMemoryVersionsResult)
_CHANGE = TypeAdapter(ConversationChange)
_ME = TypeAdapter(Me)


def _no_content() -> Response:
    return Response(status_code=204)


def _decoded(name: str, description: str) -> Any:
    def param(value: Annotated[str, Path(alias=name, description=description)]) -> str:
        return path_value(value)

    return Depends(param)


ConversationId = Annotated[
    str, _decoded("conversationId", "The conversation's id (percent-encode a '/' in it)")
]
MessageId = Annotated[str, _decoded("messageId", "The message's id")]
MemoryStoreId = Annotated[str, _decoded("memoryStoreId", "The memory store's id (memstore_...)")]
EntryId = Annotated[str, _decoded("entryId", "The entry's id (mem_...)")]
VersionId = Annotated[str, _decoded("versionId", "The version's id (memver_...)")]
Limit = Annotated[int, Query(description="Page size, 1 to 100 (the store's limit)")]
Cursor = Annotated[str | None, Query()]


def _caller_dependency(ctx: _Context) -> Any:
    """The dependency giving each endpoint its ``Caller`` (and declaring bearer auth)."""
    bearer = HTTPBearer(auto_error=False, description="A token of the server's token table")

    async def caller(
        connection: HTTPConnection,
        _token: Annotated[Any, Depends(bearer)],
        as_user: Annotated[
            str | None,
            Query(
                alias="userId",
                description="Admins only: act as this user (a user may give only their own)",
            ),
        ] = None,
    ) -> Caller:
        return ctx.caller(await ctx.principal(connection), as_user)

    return Annotated[Caller, Depends(caller)]


def _principal_routes(router: APIRouter, Who: Any) -> None:
    @router.get("/me", response_model=Me, tags=["principal"])
    async def me(*, who: Who) -> Response:
        """Who the token is for (a user, or an admin): what a front-end asks first."""
        principal = who.principal
        return _json(Me(user_id=principal.user_id, admin=principal.admin), _ME)


def _conversation_routes(router: APIRouter, Who: Any) -> None:
    # -- conversations ---------------------------------------------------------------------

    @router.get("/conversations", response_model=ListConversationsResult, tags=["conversations"])
    async def list_conversations(
        *,
        who: Who,
        limit: Limit = 20,
        order: Order = "desc",
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
        before: Annotated[str | None, Query(description="A previousCursor")] = None,
    ) -> Response:
        """Conversations by last activity (a user's own only), a page at a time."""
        page = await who.store.list_conversations(
            limit=limit, order=order, after=after, before=before, user_id=who.user_id
        )
        return _json(page, _CONVERSATIONS)

    @router.get(
        "/conversations/{conversationId}",
        response_model=ConversationMeta,
        tags=["conversations"],
    )
    async def get_conversation(*, who: Who, conversation_id: ConversationId) -> Response:
        """The conversation's metadata and counters."""
        meta = await who.store.get_conversation(
            conversation_id=conversation_id, user_id=who.user_id
        )
        if meta is None:
            raise not_found(f"conversation {conversation_id!r} not found")
        return _json(meta, _META)

    @router.patch(
        "/conversations/{conversationId}",
        response_model=ConversationMeta,
        tags=["conversations"],
    )
    async def update_conversation(
        *, who: Who, conversation_id: ConversationId, patch: ConversationPatch
    ) -> Response:
        """Shallow-merge metadata atomically (``null`` deletes a key); creates the
        conversation (as the caller's) if it does not exist."""
        meta = await who.store.update_conversation(
            conversation_id=conversation_id, metadata=patch.metadata, user_id=who.user_id
        )
        return _json(meta, _META)

    @router.delete("/conversations/{conversationId}", status_code=204, tags=["conversations"])
    async def delete_conversation(*, who: Who, conversation_id: ConversationId) -> Response:
        """Delete the conversation and its messages (deleting a missing one does nothing)."""
        await who.store.delete_conversation(conversation_id=conversation_id, user_id=who.user_id)
        return _no_content()


def _message_routes(router: APIRouter, Who: Any) -> None:

    @router.get(
        "/conversations/{conversationId}/messages",
        response_model=list[Message],
        tags=["messages"],
    )
    async def get_messages(
        *,
        who: Who,
        conversation_id: ConversationId,
        limit: Limit = 20,
        order: Order = "asc",
        after: Annotated[str | None, Query(description="A messageId: the page after it")] = None,
        before: Annotated[str | None, Query(description="A messageId: the page before it")] = None,
    ) -> Response:
        """A page of messages (``[]`` for a conversation that does not exist)."""
        messages = await who.store.get_messages(
            conversation_id=conversation_id,
            limit=limit,
            order=order,
            after=after,
            before=before,
            user_id=who.user_id,
        )
        return _json(messages, _MESSAGES)

    @router.post(
        "/conversations/{conversationId}/messages",
        status_code=201,
        response_model=Appended | AppendedBatch,
        tags=["messages"],
    )
    async def append(
        *,
        who: Who,
        conversation_id: ConversationId,
        body: Annotated[NewMessageOrBatch, Body()],
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                description="Makes a retry safe: the message's id (a batch's n-th message"
                " without its own id gets '<key>:<n>')",
            ),
        ] = None,
    ) -> Response:
        """Append one message, or a batch atomically; creates the conversation (as the
        caller's) if it does not exist."""
        if isinstance(body, NewMessage):
            mid = body.message_id
            if idempotency_key is not None and mid is not None and mid != idempotency_key:
                raise ApiError(
                    400,
                    "invalid_argument",
                    "messageId and the Idempotency-Key header differ; give one of them",
                    argument="messageId",
                )
            message_id = await who.store.append_message(
                conversation_id=conversation_id,
                role=body.role,
                content=body.content,
                metadata=body.metadata,
                user_id=who.user_id,
                message_id=mid or idempotency_key,
            )
            return _json(Appended(message_id=message_id), _APPENDED, 201)
        batch: list[Any] = []
        for i, m in enumerate(body.messages):
            mid = m.message_id
            if mid is None and idempotency_key is not None:
                mid = f"{idempotency_key}:{i}"
            batch.append(
                {"role": m.role, "content": m.content, "metadata": m.metadata, "message_id": mid}
            )
        ids = await who.store.append_messages(
            conversation_id=conversation_id, messages=batch, user_id=who.user_id
        )
        return _json(AppendedBatch(message_ids=ids), _APPENDED_BATCH, 201)

    @router.delete("/conversations/{conversationId}/messages", status_code=204, tags=["messages"])
    async def clear_messages(*, who: Who, conversation_id: ConversationId) -> Response:
        """Delete every message of the conversation; its metadata stays."""
        await who.store.clear_messages(conversation_id=conversation_id, user_id=who.user_id)
        return _no_content()

    @router.get(
        "/conversations/{conversationId}/messages/{messageId}",
        response_model=Message,
        tags=["messages"],
    )
    async def get_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId
    ) -> Response:
        """One message."""
        message = await who.store.get_message(
            conversation_id=conversation_id, message_id=message_id, user_id=who.user_id
        )
        if message is None:
            raise not_found(
                f"message_id {message_id!r} not found in conversation {conversation_id!r}"
            )
        return _json(message, _MESSAGE)

    @router.patch(
        "/conversations/{conversationId}/messages/{messageId}",
        response_model=Message,
        tags=["messages"],
    )
    async def update_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId, patch: MessagePatch
    ) -> Response:
        """Overwrite the message's content and/or metadata; sets ``updatedAt``."""
        message = await who.store.update_message(
            conversation_id=conversation_id,
            message_id=message_id,
            content=patch.content,
            metadata=patch.metadata,
            user_id=who.user_id,
        )
        return _json(message, _MESSAGE)

    @router.delete(
        "/conversations/{conversationId}/messages/{messageId}",
        status_code=204,
        tags=["messages"],
    )
    async def delete_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId
    ) -> Response:
        """Delete one message (deleting a missing one does nothing)."""
        await who.store.delete_message(
            conversation_id=conversation_id, message_id=message_id, user_id=who.user_id
        )
        return _no_content()


def _memory_routes(router: APIRouter, Who: Any) -> None:

    @router.post(
        "/memory_stores", status_code=201, response_model=MemoryStore, tags=["memory stores"]
    )
    async def create_memory_store(*, who: Who, body: NewMemoryStore) -> Response:
        """Create an empty memory store, owned by the caller."""
        created = await who.store.create_memory_store(
            body.name, description=body.description, metadata=body.metadata, user_id=who.user_id
        )
        return _json(created, _STORE, 201)

    @router.get("/memory_stores", response_model=ListMemoryStoresResult, tags=["memory stores"])
    async def list_memory_stores(
        *,
        who: Who,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Memory stores, oldest first (a user's own only)."""
        page = await who.store.list_memory_stores(limit=limit, after=after, user_id=who.user_id)
        return _json(page, _STORES)

    @router.get(
        "/memory_stores/{memoryStoreId}", response_model=MemoryStore, tags=["memory stores"]
    )
    async def get_memory_store(*, who: Who, memory_store_id: MemoryStoreId) -> Response:
        """The memory store with its ``entryCount`` and ``totalSize``."""
        found = await who.store.get_memory_store(memory_store_id, user_id=who.user_id)
        if found is None:
            raise not_found(f"memory_store_id {memory_store_id!r} not found")
        return _json(found, _STORE)

    @router.delete("/memory_stores/{memoryStoreId}", status_code=204, tags=["memory stores"])
    async def delete_memory_store(*, who: Who, memory_store_id: MemoryStoreId) -> Response:
        """Delete the memory store with every entry and version (deleting a missing one does
        nothing)."""
        await who.store.delete_memory_store(memory_store_id, user_id=who.user_id)
        return _no_content()

    @router.post(
        "/memory_stores/{memoryStoreId}/memories",
        status_code=201,
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def create_memory(
        *, who: Who, memory_store_id: MemoryStoreId, body: NewMemory
    ) -> Response:
        """Create an entry at a path (version 1); a live path is 409 ``path_conflict``."""
        entry = await who.store.create_memory(
            memory_store_id, body.path, body.content, user_id=who.user_id
        )
        return _json(entry, _ENTRY, 201)

    @router.get(
        "/memory_stores/{memoryStoreId}/memories",
        response_model=ListMemoriesResult,
        tags=["memories"],
    )
    async def list_memories(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        path_prefix: Annotated[
            str | None, Query(alias="pathPrefix", description="Only paths starting with it")
        ] = None,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Live entries by path, without their content."""
        page = await who.store.list_memories(
            memory_store_id, path_prefix=path_prefix, limit=limit, after=after, user_id=who.user_id
        )
        return _json(page, _ENTRIES)

    @router.get(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def get_memory(
        *, who: Who, memory_store_id: MemoryStoreId, entry_id: EntryId
    ) -> Response:
        """One live entry with its content."""
        entry = await who.store.get_memory(memory_store_id, entry_id, user_id=who.user_id)
        if entry is None:
            raise not_found(
                f"entry_id {entry_id!r} is not a live entry of memory store {memory_store_id!r}"
            )
        return _json(entry, _ENTRY)

    @router.put(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryEntry,
        tags=["memories"],
    )
    async def update_memory(
        *, who: Who, memory_store_id: MemoryStoreId, entry_id: EntryId, body: MemoryUpdate
    ) -> Response:
        """A new version of the entry if ``version`` is current, else 409 ``version_conflict``
        with ``currentVersion``."""
        entry = await who.store.update_memory(
            memory_store_id,
            entry_id,
            body.content,
            body.version,
            path=body.path,
            user_id=who.user_id,
        )
        return _json(entry, _ENTRY)

    @router.delete(
        "/memory_stores/{memoryStoreId}/memories/{entryId}",
        response_model=MemoryVersion,
        tags=["memories"],
    )
    async def delete_memory(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        entry_id: EntryId,
        version: Annotated[
            int | None, Query(description="Delete only if this is the entry's current version")
        ] = None,
    ) -> Response:
        """Delete the entry: returns the deletion version (the same one again on a retry)."""
        deleted = await who.store.delete_memory(
            memory_store_id, entry_id, version=version, user_id=who.user_id
        )
        return _json(deleted, _VERSION)

    @router.get(
        "/memory_stores/{memoryStoreId}/versions",
        response_model=ListMemoryVersionsResult,
        tags=["memory versions"],
    )
    async def list_memory_versions(
        *,
        who: Who,
        memory_store_id: MemoryStoreId,
        entry_id: Annotated[
            str | None, Query(alias="entryId", description="Only this entry's versions")
        ] = None,
        limit: Limit = 20,
        after: Annotated[str | None, Query(description="A nextCursor")] = None,
    ) -> Response:
        """Versions without their content, oldest first."""
        page = await who.store.list_memory_versions(
            memory_store_id, entry_id=entry_id, limit=limit, after=after, user_id=who.user_id
        )
        return _json(page, _VERSIONS)

    @router.get(
        "/memory_stores/{memoryStoreId}/versions/{versionId}",
        response_model=MemoryVersion,
        tags=["memory versions"],
    )
    async def get_memory_version(
        *, who: Who, memory_store_id: MemoryStoreId, version_id: VersionId
    ) -> Response:
        """One version with its content (none for a deletion or a redacted version)."""
        found = await who.store.get_memory_version(memory_store_id, version_id, user_id=who.user_id)
        if found is None:
            raise not_found(
                f"version_id {version_id!r} not found in memory store {memory_store_id!r}"
            )
        return _json(found, _VERSION)

    @router.post(
        "/memory_stores/{memoryStoreId}/versions/{versionId}/redact",
        response_model=MemoryVersion,
        tags=["memory versions"],
    )
    async def redact_memory_version(
        *, who: Who, memory_store_id: MemoryStoreId, version_id: VersionId
    ) -> Response:
        """Admins only: erase one version's content for good (its metadata stays)."""
        if not who.principal.admin:
            raise ApiError(403, "forbidden", "redaction is for admins only")
        redacted = await who.store.redact_memory_version(
            memory_store_id, version_id, user_id=who.user_id
        )
        return _json(redacted, _VERSION)


_LAST_EVENT_ID = re.compile("[0-9]{1,20}")


def _event(change: ConversationChange) -> ServerSentEvent:
    return ServerSentEvent(
        event=change.kind, id=str(change.seq), raw_data=dump_json(change, _CHANGE).decode()
    )


def _event_routes(router: APIRouter, Who: Any, hub: ChangeHub) -> None:
    async def first_changes(
        *,
        who: Who,
        conversation_id: ConversationId,
        after: Annotated[
            int | None,
            Query(description="Resume after this event id (a Last-Event-ID header wins)"),
        ] = None,
        last_event_id: Annotated[
            str | None,
            Header(alias="Last-Event-ID", description="The id of the last event received"),
        ] = None,
    ) -> tuple[Caller, str, ConversationChanges]:
        """The changes before the stream starts: ownership and cursors are checked here, so
        an error is an ordinary JSON response."""
        if last_event_id is not None:
            if not _LAST_EVENT_ID.fullmatch(last_event_id.strip()):
                raise ApiError(
                    400,
                    "invalid_argument",
                    f"Last-Event-ID must be an event id (a number), got {last_event_id[:40]!r}",
                    argument="Last-Event-ID",
                )
            after = int(last_event_id)
        changes = await who.store.get_changes(
            conversation_id=conversation_id,
            after=after,
            limit=who.store.limits.max_page_size,
            user_id=who.user_id,
        )
        return who, conversation_id, changes

    @router.get(
        "/conversations/{conversationId}/events",
        response_class=EventSourceResponse,
        tags=["events"],
    )
    async def events(
        first: Annotated[tuple[Caller, str, ConversationChanges], Depends(first_changes)],
    ) -> AsyncIterable[ServerSentEvent]:
        """Server-Sent Events of the conversation from now on (or after ``Last-Event-ID``),
        whoever writes it: ``message.created``, ``message.updated``, ``message.deleted``,
        ``messages.cleared``, ``conversation.updated`` (data: the change, with the message
        as it is now), ``conversation.deleted``. Each event's ``id`` resumes the stream."""
        who, cid, changes = first
        page = who.store.limits.max_page_size
        cursor, existed = changes.cursor, changes.conversation is not None
        yield ServerSentEvent(comment="subscribed", retry=1000)
        for change in changes.items:
            yield _event(change)
        while True:
            wake = await hub.next_change()
            try:
                changes = await who.store.get_changes(
                    conversation_id=cid, after=cursor, limit=page, user_id=who.user_id
                )
            except ConvostoreError:  # deleted and made anew by someone else, or a failure
                return  # the client reconnects with its Last-Event-ID
            for change in changes.items:
                yield _event(change)
            cursor = changes.cursor
            if existed and changes.conversation is None:
                deleted = json.dumps({"conversationId": cid})
                yield ServerSentEvent(
                    event="conversation.deleted", id=str(cursor), raw_data=deleted
                )
            existed = changes.conversation is not None
            if len(changes.items) < page:
                await wake.wait()


def _router(ctx: _Context, hub: ChangeHub) -> APIRouter:
    router = APIRouter(responses=_ERRORS)
    who = _caller_dependency(ctx)
    _principal_routes(router, who)
    _conversation_routes(router, who)
    _message_routes(router, who)
    _event_routes(router, who, hub)
    _memory_routes(router, who)
    return router


def _async_store(store: StoreArg) -> tuple[AsyncConversationStore, bool]:
    """The async store for ``store`` and whether it was opened here (and is ours to close)."""
    if isinstance(store, AsyncConversationStore):
        return store, False
    if isinstance(store, ConversationStore):
        return AsyncConversationStore(sync=store), False
    if store is None or isinstance(store, str):
        return AsyncConversationStore(store), True
    raise MemoryValidationError(
        "store must be a ConversationStore, an AsyncConversationStore or a URL,"
        f" got {type(store).__name__}",
        argument="store",
    )


def create_app(
    store: StoreArg = None,
    *,
    auth: Authenticator | Literal[False] | None = None,
    cors_origins: Sequence[str] = (),
    cors_credentials: bool = False,
    max_body_bytes: int | None = None,
) -> FastAPI:
    """The ASGI app serving ``store`` (a store, its async twin, a URL, or None for the default
    of ``ConversationStore()``); mount it in your own app or run it with uvicorn.

    ``auth``: None reads the token table from ``$CONVOSTORE_SERVER_TOKENS`` /
    ``$CONVOSTORE_SERVER_TOKENS_FILE`` (no token configured: every request is 401); a
    ``TokenTable`` or your own function ``(request) -> Principal | None`` (may be async);
    ``False`` runs without authentication, every caller an admin, for loopback clients only.
    ``cors_origins`` are the origins a browser may call from. ``max_body_bytes`` bounds a
    request body, checked before it is read (default: the store's content plus metadata
    limits, plus 1 MB).
    """
    async_store, owned = _async_store(store)
    authenticate: Authenticator | None
    if auth is False:
        authenticate = None
    elif auth is None:
        authenticate = TokenTable.from_env()
        if not authenticate.entries:
            log.warning("no tokens configured: every request will be refused (401)")
    else:
        authenticate = auth
    limits = async_store.limits
    if max_body_bytes is None:
        max_body_bytes = limits.max_content_bytes + limits.max_metadata_bytes + 1024 * 1024

    hub = ChangeHub(async_store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await hub.close()
        if owned:
            await async_store.aclose()

    app = FastAPI(
        title="convostore-server",
        version="0.1.0",
        description="Conversations, messages and memory stores of a convostore database.",
        lifespan=lifespan,
    )
    ctx = _Context(async_store, authenticate)
    app.state.convostore = async_store
    app.include_router(_router(ctx, hub))

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse("ui/", status_code=307)  # relative: works where it is mounted

    app.mount("/ui", web_app(), name="ui")  # the web view: static files, no data
    install_error_handlers(app)
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=max_body_bytes)
    app.add_middleware(DeclaredSizeLimit, max_bytes=max_body_bytes)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_credentials=cors_credentials,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"],
        )
    app.add_middleware(EncodedSlashes)
    return app
