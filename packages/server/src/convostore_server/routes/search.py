"""Search: a user's messages, and the entries of a memory store, found by their text (the
core's ``search_messages`` and ``search_memories``)."""

from typing import Annotated, Any

from convostore import MemorySearchResult, MemoryValidationError, Role, SearchResult
from fastapi import APIRouter, Query
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ApiError
from .common import Limit, MemoryStoreId, exact_query, json_response

_HITS = TypeAdapter(SearchResult)
_MEMORY_HITS = TypeAdapter(MemorySearchResult)

Q = Annotated[
    str,
    Query(
        description="One or more terms (a term in double quotes may hold spaces); each must"
        " occur in the text, ignoring case. At most 1,000 characters and 16 terms."
    ),
]
After = Annotated[str | None, Query(description="A nextCursor")]


def _query(request: Request) -> str:
    """``q`` exactly as sent (see ``exact_query``)."""
    return exact_query(request, "q") or ""


def _named_q(exc: MemoryValidationError) -> Exception:
    """The core's error about ``query`` in the words of this API, whose parameter is ``q``."""
    if exc.argument != "query":
        return exc
    return ApiError(400, "invalid_argument", f"q:{exc.detail}", argument="q")


def routes(router: APIRouter, Who: Any) -> None:

    @router.get("/search/messages", response_model=SearchResult, tags=["search"])
    async def search_messages(
        *,
        who: Who,
        request: Request,
        q: Q,
        conversation_id: Annotated[
            str | None, Query(alias="conversationId", description="Only this conversation")
        ] = None,
        role: Annotated[
            list[Role] | None, Query(description="Only these roles (repeat it for several)")
        ] = None,
        limit: Limit = 20,
        after: After = None,
    ) -> Response:
        """The caller's messages holding every term of ``q``, newest first, each with its
        conversation and a snippet around the first match."""
        query = _query(request)
        try:
            found = await who.call(
                lambda s: s.search_messages(
                    query=query,
                    user_id=who.user_id,
                    conversation_id=conversation_id,
                    roles=role,
                    limit=limit,
                    after=after,
                )
            )
        except MemoryValidationError as exc:
            raise _named_q(exc) from None
        return json_response(found, _HITS)

    @router.get(
        "/memory_stores/{memoryStoreId}/search",
        response_model=MemorySearchResult,
        tags=["memories"],
    )
    async def search_memories(
        *,
        who: Who,
        request: Request,
        memory_store_id: MemoryStoreId,
        q: Q,
        path_prefix: Annotated[
            str | None, Query(alias="pathPrefix", description="Only paths starting with it")
        ] = None,
        limit: Limit = 20,
        after: After = None,
    ) -> Response:
        """Live entries whose path and content hold every term of ``q``, by path, without
        their content: each with a snippet around the first match."""
        query = _query(request)
        try:
            found = await who.call(
                lambda s: s.search_memories(
                    memory_store_id=memory_store_id,
                    query=query,
                    path_prefix=path_prefix,
                    user_id=who.user_id,
                    limit=limit,
                    after=after,
                )
            )
        except MemoryValidationError as exc:
            raise _named_q(exc) from None
        return json_response(found, _MEMORY_HITS)
