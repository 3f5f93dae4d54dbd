"""``GET /conversations/{conversationId}/events``: a conversation's changes as Server-Sent
Events, from the database's change feed (``ChangeHub`` wakes the open streams)."""

import contextlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Annotated, Any

from convostore import (
    ConversationChange,
    ConversationChanges,
    ConversationMeta,
    ConvostoreError,
    MemoryValidationError,
)
from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import TypeAdapter

from ..errors import ApiError, dump_json
from ..hub import ChangeHub
from .common import ConversationId
from .metrics import subscribed
from .principal import Caller


class ConversationUpdated(ConversationChange):
    """A ``conversation.updated`` event's data: the change and the conversation as it is."""

    conversation: ConversationMeta | None = None


_CHANGE = TypeAdapter(ConversationChange)
_UPDATED = TypeAdapter(ConversationUpdated)
_LAST_EVENT_ID = re.compile("[0-9]{1,20}")


def _event(change: ConversationChange, conversation: ConversationMeta | None) -> ServerSentEvent:
    if change.kind == "conversation.updated":
        data = dump_json(ConversationUpdated(**dict(change), conversation=conversation), _UPDATED)
    else:
        data = dump_json(change, _CHANGE)
    return ServerSentEvent(event=change.kind, id=str(change.seq), raw_data=data.decode())


def _deleted(cid: str) -> ServerSentEvent:
    """The conversation is gone (or made anew): resuming from id 0 reads a new one whole."""
    data = json.dumps({"conversationId": cid})
    return ServerSentEvent(event="conversation.deleted", id="0", raw_data=data)


async def _changes(who: Caller, cid: str, after: int | None) -> ConversationChanges:
    return await who.call(
        lambda s: s.get_changes(
            conversation_id=cid, after=after, limit=s.limits.max_page_size, user_id=who.user_id
        )
    )


def _made_anew(seen: ConversationMeta | None, now: ConversationMeta | None) -> bool:
    """Whether the conversation a stream showed is gone: deleted, or deleted and made again
    (by anyone: another user's is as a missing one) since the stream's last read."""
    return seen is not None and (now is None or now.created_at != seen.created_at)


def routes(router: APIRouter, Who: Any, hub: ChangeHub) -> None:
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
    ) -> tuple[Caller, str, int | None, ConversationChanges]:
        """The changes before the stream starts: ownership and cursors are checked here, so
        an error is an ordinary JSON response."""
        try:
            if last_event_id is not None:
                if not _LAST_EVENT_ID.fullmatch(last_event_id.strip()):
                    raise ApiError(
                        400,
                        "invalid_argument",
                        f"Last-Event-ID must be an event id (a number), got {last_event_id[:40]!r}",
                        argument="Last-Event-ID",
                    )
                after = int(last_event_id)
            changes = await _changes(who, conversation_id, after)
        except MemoryValidationError as exc:
            if last_event_id is None or exc.argument != "after":
                raise
            raise ApiError(
                400, "invalid_argument", f"Last-Event-ID{exc.detail}", argument="Last-Event-ID"
            ) from None
        return who, conversation_id, after, changes

    @router.get(
        "/conversations/{conversationId}/events",
        response_class=EventSourceResponse,
        tags=["events"],
    )
    async def get_events(
        first: Annotated[
            tuple[Caller, str, int | None, ConversationChanges], Depends(first_changes)
        ],
    ) -> AsyncIterable[ServerSentEvent]:
        """Server-Sent Events of the conversation from now on (or after ``Last-Event-ID``),
        whoever writes it: ``message.created``, ``message.updated`` (data: the change, with
        the message as it is now), ``message.deleted``, ``messages.cleared``,
        ``conversation.updated`` (data: the change, with the conversation as it is now),
        ``conversation.deleted`` (then the stream goes on, for a conversation made again
        with that id). Each event's ``id`` resumes the stream."""
        async with contextlib.aclosing(_stream(hub, *first)) as events:
            with subscribed():
                async for event in events:
                    yield event


async def _stream(
    hub: ChangeHub, who: Caller, cid: str, after: int | None, changes: ConversationChanges
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of ``get_events``: the first changes, then each change as it comes."""
    page = who.store.limits.max_page_size
    yield ServerSentEvent(comment="subscribed", retry=1000)
    if after and changes.conversation is None:  # resumed after the conversation went
        yield _deleted(cid)
        changes = changes.model_copy(update={"cursor": 0})
    seen = changes.conversation
    for change in changes.items:
        yield _event(change, seen)
    cursor = changes.cursor
    while True:
        wake = await hub.next_change()
        try:
            changes = await _changes(who, cid, cursor)
            if _made_anew(seen, changes.conversation):
                yield _deleted(cid)
                changes = await _changes(who, cid, 0)
        except ConvostoreError:  # the database failed: the client reconnects and resumes
            return
        seen = changes.conversation
        for change in changes.items:
            yield _event(change, seen)
        cursor = changes.cursor
        if len(changes.items) < page:
            await wake.wait()
