"""``GET /conversations/{conversationId}/events``: a conversation's changes as Server-Sent
Events, from the database's change feed (``ChangeHub`` wakes the open streams)."""

import json
import re
from collections.abc import AsyncIterable
from typing import Annotated, Any

from convostore import ConversationChange, ConversationChanges, ConvostoreError
from fastapi import APIRouter, Depends, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import TypeAdapter

from ..errors import ApiError, dump_json
from ..hub import ChangeHub
from .common import ConversationId
from .principal import Caller

_CHANGE = TypeAdapter(ConversationChange)
_LAST_EVENT_ID = re.compile("[0-9]{1,20}")


def _event(change: ConversationChange) -> ServerSentEvent:
    return ServerSentEvent(
        event=change.kind, id=str(change.seq), raw_data=dump_json(change, _CHANGE).decode()
    )


async def _changes(who: Caller, cid: str, after: int | None) -> ConversationChanges:
    return await who.call(
        lambda s: s.get_changes(
            conversation_id=cid, after=after, limit=s.limits.max_page_size, user_id=who.user_id
        )
    )


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
        changes = await _changes(who, conversation_id, after)
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
                changes = await _changes(who, cid, cursor)
            except ConvostoreError:  # the database failed: the client reconnects and resumes
                return
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
