"""Conversations and their messages: listing, metadata, appends (one or a batch, with
``Idempotency-Key``), reads, edits and deletes."""

import json
from typing import Annotated, Any, get_args

from convostore import (
    ConversationMeta,
    ListConversationsResult,
    MemoryValidationError,
    Message,
    Order,
    Role,
)
from fastapi import APIRouter, Body, Header, Query
from pydantic import Discriminator, Tag, TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ApiError, not_found, path_value
from .common import (
    Content,
    ConversationId,
    In,
    Limit,
    MessageId,
    Out,
    json_response,
    no_content,
)
from .fast import path_id, plain_query, with_lane
from .principal import Caller, Context, caller_of


class NewMessage(In):
    """A message to append; ``messageId`` makes a retry safe (the same id and message are
    stored once)."""

    role: Role
    content: Content
    metadata: dict[str, Any] | None = None
    message_id: str | None = None


class NewMessages(In):
    """A batch of messages, appended atomically (all or none)."""

    messages: list[NewMessage]


def _one_or_batch(body: Any) -> str:
    return "batch" if isinstance(body, dict) and "messages" in body else "message"


NewMessageOrBatch = Annotated[
    Annotated[NewMessage, Tag("message")] | Annotated[NewMessages, Tag("batch")],
    Discriminator(_one_or_batch),
]


class MessagePatch(In):
    """What to overwrite in a message: ``content``, ``metadata`` (replaced, not merged) or both."""

    content: Content | None = None
    metadata: dict[str, Any] | None = None


class ConversationPatch(In):
    """A shallow merge into the conversation's metadata: a ``null`` value deletes its key."""

    metadata: dict[str, Any]


class ConversationFork(In):
    """Where to copy the conversation: ``newConversationId`` (a free id), every message or
    those up to and including ``upTo``, ``metadata`` shallow-merged into the copy's."""

    new_conversation_id: str
    up_to: str | None = None
    metadata: dict[str, Any] | None = None


class Appended(Out):
    message_id: str


class AppendedBatch(Out):
    message_ids: list[str]


class ListMessagesResult(Out):
    """A page of messages; ``nextCursor`` (pass it as ``after``) when later messages exist,
    ``previousCursor`` (pass it as ``before``) when earlier ones do: ``after`` and ``before``
    are in time, whatever the page's ``order``."""

    items: list[Message]
    next_cursor: str | None = None
    previous_cursor: str | None = None


class _MessagePage:
    """A page read with one message more than ``limit`` (when it could be): which way it
    walked, whether more lie that way, and its cursors."""

    def __init__(
        self,
        messages: list[Message],
        limit: int,
        *,
        order: Order,
        after: str | None,
        before: str | None,
    ) -> None:
        # The core reads the messages nearest the cursor (or the start, or the end): later
        # ones after `after` or from the start in `asc`, earlier ones otherwise.
        self.forward = before is None and (after is not None or order == "asc")
        self.order, self.after, self.before = order, after, before
        chronological = messages if order == "asc" else messages[::-1]
        self.more = len(chronological) > limit
        self.full = len(chronological) == limit
        if self.more:
            chronological = chronological[:limit] if self.forward else chronological[-limit:]
        self.chronological = chronological

    def beyond(self) -> tuple[str | None, str | None]:
        """``after`` and ``before`` for the one message past the page, the way it walked."""
        if self.forward:
            return self.chronological[-1].message_id, None
        return None, self.chronological[0].message_id

    def result(self) -> ListMessagesResult:
        chronological = self.chronological
        later = self.more if self.forward else self.before is not None
        earlier = self.after is not None if self.forward else self.more
        return ListMessagesResult(
            items=chronological if self.order == "asc" else chronological[::-1],
            next_cursor=chronological[-1].message_id if chronological and later else None,
            previous_cursor=chronological[0].message_id if chronological and earlier else None,
        )


_MESSAGE = TypeAdapter(Message)
_MESSAGE_PAGE = TypeAdapter(ListMessagesResult)
_META = TypeAdapter(ConversationMeta)
_CONVERSATIONS = TypeAdapter(ListConversationsResult)
_APPENDED = TypeAdapter(Appended)
_APPENDED_BATCH = TypeAdapter(AppendedBatch)


async def _same_request(
    who: Caller, cid: str, key: str, keyed: list[int] | None, size: int = 0
) -> None:
    """Refuse a request that reuses an ``Idempotency-Key`` for another one: a retry holds the
    ids the key gave all or none (``key`` for one message, ``key:<i>`` for the batch's
    positions ``keyed``), and none of the other form or beyond the batch's ``size``. (The core
    compares each message a retry sends again; only the batch's shape is checked here.)"""
    probe = [key, *(f"{key}:{i}" for i in range(size + 1))]
    try:
        held = await who.create(
            cid,
            lambda s: s.existing_message_ids(
                conversation_id=cid, message_ids=probe, user_id=who.user_id
            ),
        )
    except MemoryValidationError:
        return  # a key no id can be made of: the append refuses it, naming the message's id
    given = {key} if keyed is None else {f"{key}:{i}" for i in keyed}
    if held and held != given:
        raise ApiError(
            409,
            "message_id_conflict",
            f"Idempotency-Key {key!r} was used for another request (a batch of another length,"
            " or one message where this is a batch, or the other way round): use a new key",
            argument="Idempotency-Key",
        )


def routes(router: APIRouter, Who: Any, ctx: Context) -> None:
    _conversation_routes(router, Who)
    _message_routes(router, Who, ctx)
    _message_item_routes(router, Who)


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
        return json_response(page, _CONVERSATIONS)

    @router.get(
        "/conversations/{conversationId}",
        response_model=ConversationMeta,
        tags=["conversations"],
    )
    async def get_conversation(*, who: Who, conversation_id: ConversationId) -> Response:
        """The conversation's metadata and counters."""
        meta = await who.call(
            lambda s: s.get_conversation(conversation_id=conversation_id, user_id=who.user_id)
        )
        if meta is None:
            raise not_found(f"conversation {conversation_id!r} not found")
        return json_response(meta, _META)

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
        meta = await who.create(
            conversation_id,
            lambda s: s.update_conversation(
                conversation_id=conversation_id, metadata=patch.metadata, user_id=who.user_id
            ),
        )
        return json_response(meta, _META)

    @router.post(
        "/conversations/{conversationId}/fork",
        status_code=201,
        response_model=ConversationMeta,
        tags=["conversations"],
    )
    async def fork_conversation(
        *, who: Who, conversation_id: ConversationId, fork: ConversationFork
    ) -> Response:
        """Copy the conversation (every message, or up to and including ``upTo``) into a new
        one, in one transaction; the copy's ``ConversationMeta`` (its metadata the source's,
        merged with ``metadata``, plus ``forkedFrom``). 409 ``conversation_exists`` if the new
        id is taken."""
        meta = await who.call(
            lambda s: s.fork_conversation(
                conversation_id=conversation_id,
                new_conversation_id=fork.new_conversation_id,
                up_to=fork.up_to,
                metadata=fork.metadata,
                user_id=who.user_id,
            )
        )
        return json_response(meta, _META, 201)

    @router.delete("/conversations/{conversationId}", status_code=204, tags=["conversations"])
    async def delete_conversation(*, who: Who, conversation_id: ConversationId) -> Response:
        """Delete the conversation and its messages (deleting a missing one does nothing)."""
        await who.call(
            lambda s: s.delete_conversation(conversation_id=conversation_id, user_id=who.user_id)
        )
        return no_content()


DEFAULT_LIMIT = 20
DEFAULT_ORDER: Order = "asc"
_ORDERS: tuple[str, ...] = get_args(Order)
_READ_QUERY = frozenset({"limit", "order", "after", "before", "userId"})
_WRITE_QUERY = frozenset({"userId"})
_NEW_MESSAGES: TypeAdapter[NewMessage | NewMessages] = TypeAdapter(NewMessageOrBatch)


def _message_routes(router: APIRouter, Who: Any, ctx: Context) -> None:
    # The fast lanes (fast.py) of the two busiest endpoints: a plain request, its parameters
    # read here, answered by the endpoint's own function.

    async def read_plainly(request: Request) -> Response | None:
        query = plain_query(request, _READ_QUERY)
        cid = path_id(request, "conversationId")
        if query is None or cid is None:
            return None
        limit, order = query.get("limit", str(DEFAULT_LIMIT)), query.get("order", DEFAULT_ORDER)
        if not (limit.isdigit() and len(limit) < 10) or order not in _ORDERS:
            return None
        return await get_messages(
            who=caller_of(ctx, request.scope, query.get("userId")),
            conversation_id=path_value(cid),
            limit=int(limit),
            order=order,  # type: ignore[arg-type]  # one of _ORDERS
            after=query.get("after"),
            before=query.get("before"),
        )

    async def append_plainly(request: Request) -> Response | None:
        query = plain_query(request, _WRITE_QUERY)
        cid = path_id(request, "conversationId")
        keys = request.headers.getlist("idempotency-key")
        if (
            query is None
            or cid is None
            or len(keys) > 1
            or request.headers.get("content-type") != "application/json"
        ):
            return None
        try:
            body = _NEW_MESSAGES.validate_python(json.loads(await request.body()))
        except Exception:  # not JSON (or too deep), or not the model's: the
            return None  # regular handler reads it again and answers as it does
        return await append_messages(
            who=caller_of(ctx, request.scope, query.get("userId")),
            conversation_id=path_value(cid),
            body=body,
            idempotency_key=keys[0] if keys else None,
        )

    @router.get(
        "/conversations/{conversationId}/messages",
        response_model=ListMessagesResult,
        tags=["messages"],
    )
    @with_lane(read_plainly)
    async def get_messages(
        *,
        who: Who,
        conversation_id: ConversationId,
        limit: Limit = DEFAULT_LIMIT,
        order: Order = DEFAULT_ORDER,
        after: Annotated[
            str | None, Query(description="A messageId (a nextCursor): the page after it")
        ] = None,
        before: Annotated[
            str | None, Query(description="A messageId (a previousCursor): the page before it")
        ] = None,
    ) -> Response:
        """A page of messages, with the cursors of the pages after it and before it in time
        (``{"items": []}`` for a conversation that does not exist)."""

        async def read(size: int, after: str | None, before: str | None) -> list[Message]:
            messages: list[Message] = await who.call(
                lambda s: s.get_messages(
                    conversation_id=conversation_id,
                    limit=size,
                    order=order,
                    after=after,
                    before=before,
                    user_id=who.user_id,
                )
            )
            return messages

        # One message more than the page tells whether there are more that way; the largest
        # page size cannot ask for one more, so it asks again, past the page, for one.
        ask = limit + 1 if 0 < limit < who.store.limits.max_page_size else limit
        messages = await read(ask, after, before)
        page = _MessagePage(messages, limit, order=order, after=after, before=before)
        if page.full and ask == limit:
            try:
                page.more = bool(await read(1, *page.beyond()))
            except MemoryValidationError:  # the page's last message went meanwhile
                page.more = True
        return json_response(page.result(), _MESSAGE_PAGE)

    @router.post(
        "/conversations/{conversationId}/messages",
        status_code=201,
        response_model=Appended | AppendedBatch,
        tags=["messages"],
    )
    @with_lane(append_plainly)
    async def append_messages(
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
            if idempotency_key is not None and mid is None:
                await _same_request(who, conversation_id, idempotency_key, None)
            message_id = await who.create(
                conversation_id,
                lambda s: s.append_message(
                    conversation_id=conversation_id,
                    role=body.role,
                    content=body.content,
                    metadata=body.metadata,
                    user_id=who.user_id,
                    message_id=mid or idempotency_key,
                ),
            )
            return json_response(Appended(message_id=message_id), _APPENDED, 201)
        batch: list[Any] = []
        keyed: list[int] = []
        for i, m in enumerate(body.messages):
            mid = m.message_id
            if mid is None and idempotency_key is not None:
                mid = f"{idempotency_key}:{i}"
                keyed.append(i)
            batch.append(
                {"role": m.role, "content": m.content, "metadata": m.metadata, "message_id": mid}
            )
        if idempotency_key is not None:
            await _same_request(who, conversation_id, idempotency_key, keyed, len(batch))
        ids = await who.create(
            conversation_id,
            lambda s: s.append_messages(
                conversation_id=conversation_id, messages=batch, user_id=who.user_id
            ),
        )
        return json_response(AppendedBatch(message_ids=ids), _APPENDED_BATCH, 201)


def _message_item_routes(router: APIRouter, Who: Any) -> None:
    @router.delete("/conversations/{conversationId}/messages", status_code=204, tags=["messages"])
    async def clear_messages(*, who: Who, conversation_id: ConversationId) -> Response:
        """Delete every message of the conversation; its metadata stays."""
        await who.call(
            lambda s: s.clear_messages(conversation_id=conversation_id, user_id=who.user_id)
        )
        return no_content()

    @router.get(
        "/conversations/{conversationId}/messages/{messageId}",
        response_model=Message,
        tags=["messages"],
    )
    async def get_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId
    ) -> Response:
        """One message."""
        message = await who.call(
            lambda s: s.get_message(
                conversation_id=conversation_id, message_id=message_id, user_id=who.user_id
            )
        )
        if message is None:
            raise not_found(
                f"message_id {message_id!r} not found in conversation {conversation_id!r}"
            )
        return json_response(message, _MESSAGE)

    @router.patch(
        "/conversations/{conversationId}/messages/{messageId}",
        response_model=Message,
        tags=["messages"],
    )
    async def update_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId, patch: MessagePatch
    ) -> Response:
        """Overwrite the message's content and/or metadata; sets ``updatedAt``."""
        message = await who.call(
            lambda s: s.update_message(
                conversation_id=conversation_id,
                message_id=message_id,
                content=patch.content,
                metadata=patch.metadata,
                user_id=who.user_id,
            )
        )
        return json_response(message, _MESSAGE)

    @router.delete(
        "/conversations/{conversationId}/messages/{messageId}",
        status_code=204,
        tags=["messages"],
    )
    async def delete_message(
        *, who: Who, conversation_id: ConversationId, message_id: MessageId
    ) -> Response:
        """Delete one message (deleting a missing one does nothing)."""
        await who.call(
            lambda s: s.delete_message(
                conversation_id=conversation_id, message_id=message_id, user_id=who.user_id
            )
        )
        return no_content()
