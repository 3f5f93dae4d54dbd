"""ASGI middleware of the server: ids holding ``/`` in paths, the declared body size, the
request bodies held at once, the read replicas' position."""

from __future__ import annotations

from urllib.parse import unquote

from convostore import AsyncConversationStore, MemoryValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ErrorDetail, error_response
from .routes.principal import authenticated


def _segment(raw: str) -> str:
    # Decoded, then '%' and '/' escaped again: the routes see one segment per id.
    return unquote(raw, errors="surrogateescape").replace("%", "%25").replace("/", "%2F")


class EncodedSlashes:
    """Let an id hold ``/`` (``claude/...`` conversation ids do): a client percent-encodes it
    (``%2F``), and this keeps it inside its path segment.

    Servers decode the path before routing, which would split such an id. When the raw path
    holds an escape, the path the routes match is rebuilt from it with ``%`` and ``/`` kept
    escaped inside each segment; ``errors.path_value`` turns a parameter back into the id.
    Bytes that are not UTF-8 become lone surrogates, which the core refuses as bad input.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and raw and b"%" in raw:
            text = raw.decode("latin-1")
            scope = {**scope, "path": "/".join(_segment(s) for s in text.split("/"))}
        await self.app(scope, receive, send)


class DeclaredSizeLimit:
    """Answer 413 (as JSON) at once when a request declares a ``Content-Length`` over
    ``max_bytes``, before any of its body is read. A body sent without a length (chunked) is
    counted as it streams by Starlette's ``RequestBodyLimitMiddleware``, inside this one."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                detail = ErrorDetail(
                    code="too_large",
                    message=f"the request body is {declared} bytes; the limit is"
                    f" {self.max_bytes} bytes",
                )
                await error_response(413, detail)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyBudget:
    """Bound the request body bytes this process holds at once, across requests: a request
    reserves its declared ``Content-Length`` before its body is read (a body streamed without
    one, each chunk as it comes) and frees it once answered. A request the budget cannot take
    now is answered 503 ``overloaded`` with ``Retry-After: 1``: before its body is read, or,
    streamed, at the chunk that would overflow it."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.free = max_bytes  # changed on the event loop only: no lock

    def _full(self) -> str:
        return (
            f"the request bodies being received fill this server's bound ({self.max_bytes}"
            " bytes): retry in a moment"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        held = int(declared) if declared.isdigit() else 0
        if held > self.free:
            detail = ErrorDetail(code="overloaded", message=self._full())
            await error_response(503, detail, {"Retry-After": "1"})(scope, receive, send)
            return
        self.free -= held

        async def counted() -> Message:
            nonlocal held
            message = await receive()
            if message["type"] == "http.request":
                size = len(message.get("body", b""))
                if size > self.free:
                    raise HTTPException(503, self._full(), {"Retry-After": "1"})
                self.free -= size
                held += size
            return message

        try:
            await self.app(scope, receive if declared.isdigit() else counted, send)
        finally:
            self.free += held


def _has_body(scope: Scope) -> bool:
    """Whether a request announces a body: a ``Content-Length`` other than 0, or a
    ``Transfer-Encoding`` (without either, HTTP/1.1 gives it none)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class BoundedBodies:
    """The bounds of request bodies, from the outside in: a declared length over
    ``max_bytes`` (``DeclaredSizeLimit``), the bodies held at once (``BodyBudget``), a body cut
    at ``max_bytes`` as it streams (Starlette's ``RequestBodyLimitMiddleware``). A request
    that announces no body (most reads) has none to bound and goes straight to ``app``."""

    def __init__(self, app: ASGIApp, max_bytes: int, max_inflight_bytes: int) -> None:
        self.app = app
        streamed = RequestBodyLimitMiddleware(app, max_body_size=max_bytes)
        self.bounded = DeclaredSizeLimit(BodyBudget(streamed, max_inflight_bytes), max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_body(scope):
            await self.bounded(scope, receive, send)
        else:
            await self.app(scope, receive, send)


POSITION_HEADER = "Convostore-Position"


class ReadYourWrites:
    """Read replicas' read-your-writes across processes (README, "Read replicas"): every
    response carries ``Convostore-Position``, the primary's WAL position this process's reads
    see (its writes included); a request that sends one back has its reads see at least that
    position, whichever worker or server process answers it. Without replicas there is no
    position to give, and one sent is only checked (every read sees every write already). Runs after authentication: a
    position the primary has not reached costs a primary round trip, then a 400."""

    def __init__(self, app: ASGIApp, store: AsyncConversationStore) -> None:
        self.app = app
        self.store = store
        self.replicated = store.replica_position() is not None  # else never a position

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get(POSITION_HEADER)
        if given is not None and authenticated(scope):  # else the route answers 401
            try:
                await self.store.read_after(given)
            except MemoryValidationError as exc:
                detail = ErrorDetail(
                    code="invalid_argument",
                    message=f"{POSITION_HEADER}: {exc}",
                    argument=POSITION_HEADER,
                )
                await error_response(400, detail)(scope, receive, send)
                return
        if not self.replicated:
            await self.app(scope, receive, send)
            return

        async def send_position(message: Message) -> None:
            if message["type"] == "http.response.start":
                position = self.store.replica_position()
                if position is not None:
                    headers = [
                        *message.get("headers", []),
                        (b"convostore-position", position.encode()),
                    ]
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_position)
