"""What the routes share: body base models, JSON responses, path and query parameters, the
documented error statuses."""

from typing import Annotated, Any, TypeAlias
from urllib.parse import parse_qsl

from fastapi import Depends, Path, Query
from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ApiError, ErrorBody, dump_json, path_value

Content: TypeAlias = str | list[Any] | dict[str, Any]


class In(BaseModel):
    """A request body: camelCase, unknown fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    """A response body of the server's own (the core's models are the others)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


ERRORS: dict[int | str, dict[str, Any]] = {
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


def json_response(value: Any, adapter: TypeAdapter[Any], status: int = 200) -> Response:
    return Response(dump_json(value, adapter), status_code=status, media_type="application/json")


def no_content() -> Response:
    return Response(status_code=204)


def _decoded(name: str, description: str) -> Any:
    async def param(value: Annotated[str, Path(alias=name, description=description)]) -> str:
        return path_value(value)

    return Depends(param)


def _chosen(name: str, what: str) -> Any:
    """A client-chosen id in the path, or in the query when a path segment cannot carry it:
    ``.`` and ``..``, which clients' URLs resolve away even percent-encoded (``%2E``). The
    path then holds ``-``."""

    async def param(
        in_path: Annotated[
            str,
            Path(
                alias=name,
                description=f"{what} (percent-encode a '/' in it); '-' when the query gives it",
            ),
        ],
        in_query: Annotated[
            str | None,
            Query(
                alias=name,
                description=f"{what}, for one a path segment cannot carry ('.', '..'): the"
                " path then holds '-'",
            ),
        ] = None,
    ) -> str:
        if in_query is None:
            return path_value(in_path)
        if in_path != "-":
            raise ApiError(
                400,
                "invalid_argument",
                f"{name} is given in the path and in the query: in the query, the path holds '-'",
                argument=name,
            )
        return in_query

    return Depends(param)


ConversationId = Annotated[str, _chosen("conversationId", "The conversation's id")]
MessageId = Annotated[str, _chosen("messageId", "The message's id")]
MemoryStoreId = Annotated[str, _decoded("memoryStoreId", "The memory store's id (memstore_...)")]
EntryId = Annotated[str, _decoded("entryId", "The entry's id (mem_...)")]
VersionId = Annotated[str, _decoded("versionId", "The version's id (memver_...)")]
PathConversationId = Annotated[str, _decoded("conversationId", "The conversation's id")]
PathItemId = Annotated[str, _decoded("itemId", "The item's id (its message's)")]
Limit = Annotated[int, Query(description="Page size, 1 to 100 (the store's limit)")]


def exact_query(request: Request, name: str) -> str | None:
    """The (last) value of the query parameter ``name`` as sent: bytes that are not UTF-8
    become lone surrogates, which the core refuses as bad input, where Starlette's parsing
    replaces them with U+FFFD (a search would then look for something never asked)."""
    raw = request.scope.get("query_string", b"").decode("latin-1")
    found = None
    for key, value in parse_qsl(raw, keep_blank_values=True, errors="surrogateescape"):
        if key == name:
            found = value
    return found
