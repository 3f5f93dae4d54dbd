"""The OpenAI Conversations API under ``/v1``, as the official ``openai`` client calls it: a
client pointed at the server (``base_url=".../v1"``, ``api_key=`` a token of the server) keeps
its conversations in the store.

One data model: a ``/v1`` conversation is a core conversation, its items are the messages,
each stored as the OpenAI session adapter stores an item (the item itself as the content, its
role by ``convostore.responses_item_role``), under the item's ``id`` when it has one, else a
``msg_`` id. A listing shows each message as the hosted API lists an item (``_item``)."""

import json
import secrets
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from convostore import (
    MANAGED_BY_KEY,
    ConversationMeta,
    MemoryValidationError,
    Message,
    MessageInput,
    Role,
    responses_item_role,
)
from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from starlette.responses import Response

from ..errors import ApiError, OpenAIErrorBody, not_found
from .common import PathConversationId, PathItemId, json_response
from .principal import Caller

MAX_ITEMS_PER_REQUEST = 20
"""What the API takes in one request (``items`` of a create)."""
MAX_METADATA_KEYS, MAX_KEY_CHARS, MAX_VALUE_CHARS = 16, 64, 512
"""OpenAI's bounds on ``metadata`` (a ``/v1`` write keeps to them)."""

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": OpenAIErrorBody, "description": what}
    for status, what in {
        400: "Bad input, or a request that does not match its schema",
        401: "No valid bearer token",
        403: "Not allowed for this principal",
        404: "No such conversation or item (or another user's)",
        409: "An item id already holds another item",
        413: "Over a size limit",
        422: "Never answered here: a request that does not match its schema is a 400",
        503: "The database failed",
    }.items()
}

Item = dict[str, Any]
Include = Annotated[
    list[str] | None,
    Query(
        alias="include[]",
        description="Accepted and ignored: an item is answered whole, as it was stored",
    ),
]
"""``include``, as the ``openai`` client sends it (``include[]=...``)."""


class _Body(BaseModel):
    """A request body: unknown fields refused, as OpenAI refuses an unknown parameter."""

    model_config = ConfigDict(extra="forbid")


Items = Annotated[list[Item], Field(max_length=MAX_ITEMS_PER_REQUEST)]


class NewConversation(_Body):
    items: Items | None = None
    metadata: dict[str, str] | None = None


class ConversationUpdate(_Body):
    metadata: dict[str, str] | None


class NewItems(_Body):
    items: Annotated[list[Item], Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)]


class Conversation(BaseModel):
    id: str
    object: Literal["conversation"] = "conversation"
    created_at: int
    metadata: dict[str, Any]


class ConversationDeleted(BaseModel):
    id: str
    object: Literal["conversation.deleted"] = "conversation.deleted"
    deleted: bool = True


class ItemList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Item]
    first_id: str | None
    last_id: str | None
    has_more: bool


_CONVERSATION = TypeAdapter(Conversation)
_DELETED = TypeAdapter(ConversationDeleted)
_ITEM = TypeAdapter(Item)
_ITEMS = TypeAdapter(ItemList)


def _check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """OpenAI's bounds on ``metadata``; the key the core keeps for components is refused."""
    metadata = dict(metadata or {})
    if len(metadata) > MAX_METADATA_KEYS:
        raise _bad("metadata", f"metadata holds {len(metadata)} keys; at most {MAX_METADATA_KEYS}")
    for key, value in metadata.items():
        if len(key) > MAX_KEY_CHARS:
            raise _bad("metadata", f"metadata: a key is {len(key)} characters; at most 64")
        if len(value) > MAX_VALUE_CHARS:
            raise _bad("metadata", f"metadata[{key!r}] is {len(value)} characters; at most 512")
        if key == MANAGED_BY_KEY:
            raise _bad("metadata", f"metadata: {key!r} is kept by the store, not by a client")
    return metadata


def _bad(argument: str, message: str) -> ApiError:
    return ApiError(400, "invalid_argument", message, argument=argument)


def _messages(items: list[Item]) -> list[MessageInput]:
    """The items as messages: the adapter's mapping, with the item's ``id`` as the message's."""
    messages: list[MessageInput] = []
    for index, item in enumerate(items):
        message: MessageInput = {"role": responses_item_role(item), "content": item}
        item_id = item.get("id")
        if item_id is not None:
            if not isinstance(item_id, str):
                raise _bad(f"items[{index}].id", f"items[{index}].id must be a string")
            message["message_id"] = item_id
        messages.append(message)
    return messages


_ITEM_FIELDS = {"content": "", "message": "", "message_id": ".id"}


async def _append(
    who: Caller, cid: str, messages: list[MessageInput], metadata: dict[str, str] | None = None
) -> list[str]:
    """Append the items' messages (with ``metadata`` folded in); the core's complaint about
    one of them names it as the client sent it (``items[2].id``, ``items[0]``)."""
    try:
        ids: list[str] = await who.store.append_messages(
            conversation_id=cid,
            messages=messages,
            user_id=who.user_id,
            fold=None if not metadata else lambda held, added: metadata,
        )
    except MemoryValidationError as exc:
        field = _ITEM_FIELDS.get(exc.argument or "")
        index = exc.index if exc.index is not None else 0 if len(messages) == 1 else None
        if field is None or index is None:
            raise
        label = f"items[{index}]{field}"
        raise type(exc)(label + exc.detail, index=index, label=label) from None
    return ids


_TEXT_PART = {"assistant": "output_text"}


def _text_part(role: str, text: str) -> Item:
    if _TEXT_PART.get(role) == "output_text":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


def _is_item(content: Any) -> bool:
    return isinstance(content, dict) and (
        isinstance(content.get("type"), str) or ("role" in content and "content" in content)
    )


_FOREIGN_ROLE: dict[Role, str] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "assistant",
}


def _item(message: Message) -> Item:
    """A message as the hosted API lists an item: its id is the message's; a message item
    has ``type``, ``status`` and its text as content parts. A message that holds no
    Responses item (written by another framework) is shown as a message of its text."""
    content = message.content
    if not _is_item(content):
        role = _FOREIGN_ROLE[message.role]
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return {
            "id": message.message_id,
            "type": "message",
            "status": "completed",
            "role": role,
            "content": [_text_part(role, text)],
        }
    item = {**content, "id": message.message_id}
    if item.get("type", "message") == "message":
        item["type"] = "message"
        item.setdefault("status", "completed")
        if isinstance(item.get("content"), str):
            item["content"] = [_text_part(str(item.get("role")), item["content"])]
    return item


def _conversation(meta: ConversationMeta) -> Response:
    found = Conversation(
        id=meta.conversation_id, created_at=meta.created_at // 1000, metadata=meta.metadata or {}
    )
    return json_response(found, _CONVERSATION)


def _item_list(data: list[Item], has_more: bool) -> Response:
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return json_response(
        ItemList(data=data, first_id=first, last_id=last, has_more=has_more), _ITEMS
    )


async def _existing(who: Caller, cid: str) -> ConversationMeta:
    meta = await who.call(lambda s: s.get_conversation(conversation_id=cid, user_id=who.user_id))
    if meta is None:
        raise not_found(f"conversation {cid!r} not found")
    return meta


def _new_id() -> str:
    return "conv_" + secrets.token_hex(24)


def routes(router: APIRouter, Who: Any) -> None:
    _conversation_routes(router, Who)
    _item_routes(router, Who)


def _conversation_routes(router: APIRouter, Who: Any) -> None:
    @router.post("/v1/conversations", response_model=Conversation, tags=["openai"])
    async def openai_create_conversation(*, who: Who, body: NewConversation) -> Response:
        """Create a conversation (the caller's), with its first items and metadata, at once."""
        metadata = _check_metadata(body.metadata)
        cid = _new_id()
        if body.items:
            await _append(who, cid, _messages(body.items), metadata)
            return _conversation(await _existing(who, cid))
        meta = await who.store.update_conversation(
            conversation_id=cid, metadata=metadata, user_id=who.user_id
        )
        return _conversation(meta)

    @router.get("/v1/conversations/{conversationId}", response_model=Conversation, tags=["openai"])
    async def openai_get_conversation(*, who: Who, conversation_id: PathConversationId) -> Response:
        """A conversation (any of the caller's, made through ``/v1`` or not)."""
        return _conversation(await _existing(who, conversation_id))

    @router.post("/v1/conversations/{conversationId}", response_model=Conversation, tags=["openai"])
    async def openai_update_conversation(
        *, who: Who, conversation_id: PathConversationId, body: ConversationUpdate
    ) -> Response:
        """Merge ``metadata`` into the conversation's (the keys given are set, the others
        kept)."""
        metadata = _check_metadata(body.metadata)
        await _existing(who, conversation_id)
        meta = await who.store.update_conversation(
            conversation_id=conversation_id, metadata=metadata, user_id=who.user_id
        )
        return _conversation(meta)

    @router.delete(
        "/v1/conversations/{conversationId}", response_model=ConversationDeleted, tags=["openai"]
    )
    async def openai_delete_conversation(
        *, who: Who, conversation_id: PathConversationId
    ) -> Response:
        """Delete the conversation and its items."""
        await _existing(who, conversation_id)
        await who.call(
            lambda s: s.delete_conversation(conversation_id=conversation_id, user_id=who.user_id)
        )
        return json_response(ConversationDeleted(id=conversation_id), _DELETED)


def _item_routes(router: APIRouter, Who: Any) -> None:
    @router.post(
        "/v1/conversations/{conversationId}/items", response_model=ItemList, tags=["openai"]
    )
    async def openai_create_items(
        *, who: Who, conversation_id: PathConversationId, body: NewItems, include: Include = None
    ) -> Response:
        """Append up to 20 items, all or none; an item sent again with its ``id`` is stored
        once (a retry is safe)."""
        messages = _messages(body.items)
        await _existing(who, conversation_id)
        ids = await _append(who, conversation_id, messages)
        data = [
            _item(Message(message_id=mid, role=m["role"], content=m["content"], created_at=0))
            for mid, m in zip(ids, messages, strict=True)
        ]
        return _item_list(data, False)

    @router.get(
        "/v1/conversations/{conversationId}/items", response_model=ItemList, tags=["openai"]
    )
    async def openai_list_items(
        *,
        who: Who,
        conversation_id: PathConversationId,
        limit: Annotated[int, Query(description="1 to 100 (the store's page size)")] = 20,
        order: Literal["asc", "desc"] = "desc",
        after: Annotated[str | None, Query(description="An item id: the page past it")] = None,
        include: Include = None,
    ) -> Response:
        """A page of items in ``order``, past ``after`` in that order."""
        cursor = {"after": after} if order == "asc" else {"before": after}

        async def read(size: int, cursor: dict[str, str | None]) -> list[Message]:
            page: list[Message] = await who.call(
                lambda s: s.get_messages(
                    conversation_id=conversation_id,
                    limit=size,
                    order=order,
                    user_id=who.user_id,
                    **cursor,
                )
            )
            return page

        # One message more than the page tells whether there are more; the largest page
        # size cannot ask for one more, so it asks again, past the page, for one.
        ask = limit + 1 if 0 < limit < who.store.limits.max_page_size else limit
        try:
            page = await read(ask, cursor)
        except MemoryValidationError as exc:  # the cursor, in the client's words
            if after is None or exc.argument not in (None, "after", "before"):
                raise
            if exc.argument is not None:
                raise _bad("after", "after" + exc.detail) from None
            await _existing(who, conversation_id)  # a missing conversation is a 404
            message = f"after: no item {after!r} in conversation {conversation_id!r}"
            raise _bad("after", message) from None
        more = len(page) > limit
        page = page[:limit]
        if not page:
            await _existing(who, conversation_id)  # a missing conversation is a 404
        elif ask == limit and len(page) == limit:
            past = page[-1].message_id
            try:
                more = bool(await read(1, {"after": past} if order == "asc" else {"before": past}))
            except MemoryValidationError:  # the page's last message went meanwhile
                more = True
        return _item_list([_item(m) for m in page], more)

    @router.get(
        "/v1/conversations/{conversationId}/items/{itemId}", response_model=Item, tags=["openai"]
    )
    async def openai_get_item(
        *,
        who: Who,
        conversation_id: PathConversationId,
        item_id: PathItemId,
        include: Include = None,
    ) -> Response:
        """One item."""
        return json_response(_item(await _found_item(who, conversation_id, item_id)), _ITEM)

    @router.delete(
        "/v1/conversations/{conversationId}/items/{itemId}",
        response_model=Conversation,
        tags=["openai"],
    )
    async def openai_delete_item(
        *, who: Who, conversation_id: PathConversationId, item_id: PathItemId
    ) -> Response:
        """Delete one item; answers the conversation."""
        await _found_item(who, conversation_id, item_id)
        await who.call(
            lambda s: s.delete_message(
                conversation_id=conversation_id, message_id=item_id, user_id=who.user_id
            )
        )
        return _conversation(await _existing(who, conversation_id))


async def _found_item(who: Caller, cid: str, item_id: str) -> Message:
    message: Message | None = await who.call(
        lambda s: s.get_message(conversation_id=cid, message_id=item_id, user_id=who.user_id)
    )
    if message is None:
        await _existing(who, cid)
        raise not_found(f"item {item_id!r} not found in conversation {cid!r}")
    return message
