"""Every error the server answers, as ``{"error": {"code", "message", "argument"}}`` with a
stable ``code`` (under ``/v1``, OpenAI's ``{"error": {"message", "type", "param", "code"}}``
with the same code); the core's errors mapped to HTTP statuses in one table."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from convostore import (
    ConflictError,
    ContentTooLargeError,
    ConversationExistsError,
    ConversationOwnershipError,
    ConvostoreError,
    MemoryPathConflictError,
    MemoryQuotaExceededError,
    MemoryStoreOwnershipError,
    MemoryValidationError,
    MemoryVersionConflictError,
    MessageIdConflictError,
    NotFoundError,
    StorageError,
)
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticSerializationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger("convostore_server")


class ErrorDetail(BaseModel):
    """What went wrong: ``code`` is stable (see the README's table), ``message`` is for people,
    ``argument`` names the argument at fault where one is; ``currentVersion`` is the entry's
    version now, on a ``version_conflict``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    code: str
    message: str
    argument: str | None = None
    current_version: int | None = None


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


class ApiError(Exception):
    """An error the server answers itself (401, 403, 404, 400)."""

    def __init__(
        self, status: int, code: str, message: str, *, argument: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.detail = ErrorDetail(code=code, message=message, argument=argument)
        self.headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found", message)


def dump_json(
    value: Any, adapter: TypeAdapter[Any], *, exclude_none: bool = False, exclude: Any = None
) -> bytes:
    """``value`` (models, lists of models) as camelCase JSON (without the fields ``exclude``
    names, as pydantic's ``exclude``). Text holding a lone surrogate, which the core stores
    and UTF-8 cannot hold, is written as a ``\\ud800`` escape."""
    options: dict[str, Any] = {"by_alias": True, "exclude_none": exclude_none, "exclude": exclude}
    try:
        return adapter.dump_json(value, **options)
    except PydanticSerializationError:
        plain = adapter.dump_python(value, **options)
        return json.dumps(plain, ensure_ascii=True, separators=(",", ":")).encode()


_ERROR = TypeAdapter(ErrorBody)


class OpenAIErrorDetail(BaseModel):
    """An error as OpenAI's API words it: ``code`` is the server's stable code, ``param`` the
    argument at fault, ``type`` the kind of error the status is."""

    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorBody(BaseModel):
    """The body of every error under ``/v1`` (OpenAI's error shape)."""

    error: OpenAIErrorDetail


_OPENAI_ERROR = TypeAdapter(OpenAIErrorBody)
OPENAI_PREFIX = "/v1"
"""Where the OpenAI Conversations API is served (``routes/openai_v1.py``)."""

_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 503: "server_error"}


def openai_path(scope: Scope) -> bool:
    """Whether a request is for the OpenAI Conversations API (under ``/v1``, wherever the
    app is mounted)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return bool(path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/"))


class ErrorResponse(Response):
    """An error answer, in the server's shape, or in OpenAI's under ``/v1``: there a request
    that does not match its schema is a 400, as OpenAI answers it (not 422)."""

    def __init__(self, status: int, detail: ErrorDetail, headers: dict[str, str] | None) -> None:
        self.detail = detail
        super().__init__(
            dump_json(ErrorBody(error=detail), _ERROR, exclude_none=True),
            status_code=status,
            media_type="application/json",
            headers=headers,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not openai_path(scope):
            await super().__call__(scope, receive, send)
            return
        status = 400 if self.status_code == 422 else self.status_code
        detail = self.detail
        body = OpenAIErrorBody(
            error=OpenAIErrorDetail(
                message=detail.message,
                type=_OPENAI_TYPES.get(status, "invalid_request_error"),
                param=detail.argument,
                code=detail.code,
            )
        )
        kept = {
            k: v for k, v in self.headers.items() if k not in ("content-length", "content-type")
        }
        if status == 409:  # a conflict stays one: OpenAI's clients retry a 409 unless told
            kept["x-should-retry"] = "false"
        answer = Response(
            dump_json(body, _OPENAI_ERROR), status, kept, media_type="application/json"
        )
        await answer(scope, receive, send)


def error_response(
    status: int, detail: ErrorDetail, headers: dict[str, str] | None = None
) -> Response:
    return ErrorResponse(status, detail, headers)


def _error(status: int, code: str, message: str, argument: str | None = None) -> Response:
    return error_response(status, ErrorDetail(code=code, message=message, argument=argument))


_ESCAPED = re.compile("%2F|%25")


def path_value(value: str) -> str:
    """A path parameter as the client meant it (see ``EncodedSlashes``)."""
    return _ESCAPED.sub(lambda m: "/" if m.group() == "%2F" else "%", value)


def _hidden(request: Request, exc: Exception) -> str:
    """The not-found message for a conversation or memory store another user owns: the same
    words a missing one gets, so an answer never tells that another user's id exists."""
    params = request.path_params
    if isinstance(exc, ConversationOwnershipError):
        return f"conversation {path_value(str(params.get('conversationId', '')))!r} not found"
    return f"memory_store_id {path_value(str(params.get('memoryStoreId', '')))!r} not found"


_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    503: "overloaded",  # the request bodies in flight are at their bound (BodyBudget)
}


def http_code(status: int) -> str:
    """The error code of an HTTP status the server answers for itself (404, 405, ...)."""
    return _HTTP_CODES.get(status, "http_error")


def _location(loc: Sequence[Any]) -> str:
    """The argument a request validation error names: ``messages.0.role``, ``limit``."""
    parts = list(loc)
    if parts and parts[0] == "body" and len(parts) > 1 and parts[1] in ("message", "batch"):
        del parts[1]  # the tag of the one-or-batch union
    if parts and parts[0] in ("body", "query", "path", "header"):
        del parts[0]
    return ".".join(str(p) for p in parts) or "body"


def install_error_handlers(app: FastAPI) -> None:
    """Map every exception to the JSON error shape; nothing a client sends answers 500."""

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.detail, exc.headers)

    async def convostore_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, ContentTooLargeError):
            return _error(413, "too_large", str(exc), exc.label or exc.argument)
        if isinstance(exc, MemoryValidationError):
            return _error(400, "invalid_argument", str(exc), exc.label or exc.argument)
        if isinstance(exc, (ConversationOwnershipError, MemoryStoreOwnershipError)):
            return _error(404, "not_found", _hidden(request, exc))
        if isinstance(exc, NotFoundError):
            return _error(404, "not_found", str(exc))
        if isinstance(exc, MemoryVersionConflictError):
            detail = ErrorDetail(
                code="version_conflict",
                message=str(exc),
                argument="version",
                current_version=exc.current_version,
            )
            return error_response(409, detail)
        if isinstance(exc, MessageIdConflictError):
            return _error(409, "message_id_conflict", str(exc), "messageId")
        if isinstance(exc, MemoryPathConflictError):
            return _error(409, "path_conflict", str(exc), "path")
        if isinstance(exc, ConversationExistsError):
            return _error(409, "conversation_exists", str(exc))
        if isinstance(exc, MemoryQuotaExceededError):
            return _error(409, "quota_exceeded", str(exc))
        if isinstance(exc, ConflictError):  # any other conflict the core may add
            return _error(409, "conflict", str(exc))
        if isinstance(exc, StorageError):
            log.error("storage error on %s %s", request.method, request.url.path, exc_info=exc)
            return error_response(
                503,
                ErrorDetail(code="storage_unavailable", message="the database is unavailable"),
                {"Retry-After": "1"},
            )
        log.error("store error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(503, "unavailable", "the store is unavailable")

    async def invalid_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first: dict[str, Any] = exc.errors()[0] if exc.errors() else {"msg": "invalid request"}
        if first.get("type") == "json_invalid":  # FastAPI's; its `loc` is a position
            at, cause = first["loc"][-1], (first.get("ctx") or {}).get("error", "")
            return _error(400, "invalid_request", f"body: not JSON ({cause}, at {at})", "body")
        where = _location(first.get("loc", ()))
        return _error(422, "invalid_request", f"{where}: {first.get('msg')}", where)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code, message, argument = http_code(exc.status_code), str(exc.detail), None
        if exc.status_code == 400:  # FastAPI's only one: a JSON body its parser gave up on
            message, argument = "body: JSON the server cannot parse (nested too deep?)", "body"
        if exc.status_code >= 500:
            log.error("HTTP %s on %s %s", exc.status_code, request.method, request.url.path)
        return error_response(
            exc.status_code,
            ErrorDetail(code=code, message=message, argument=argument),
            dict(exc.headers) if exc.headers else None,
        )

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal", "internal server error")

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(ConvostoreError, convostore_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
