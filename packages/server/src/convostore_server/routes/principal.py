"""Who is calling: the request's principal (authenticated here, or refused), the ``Caller``
every endpoint gets, and ``GET /me``."""

import inspect
import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from convostore import (
    AsyncConversationStore,
    ConversationOwnershipError,
    MemoryStoreOwnershipError,
)
from fastapi import APIRouter, Depends, Query
from fastapi.security import HTTPBearer
from pydantic import TypeAdapter
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth import Authenticator, Principal
from ..errors import ApiError, error_response
from .common import Out, json_response


class Me(Out):
    """Who the request's credentials are for: a user (``userId``) or an admin."""

    user_id: str | None = None
    admin: bool


_ME = TypeAdapter(Me)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Caller:
    """A request's principal, the ``user_id`` every core call gets, and the store to call.

    ``call(lambda store: ...)`` makes a core call that names a conversation or a memory store:
    where it meets another user's (or, for a user, nobody's), it is made again on ``nothing``,
    a store that holds nothing, and answers what a missing one answers, byte for byte. Only
    the calls that create what they name (an append, a metadata merge) use ``create``: those
    answer 409 ``conversation_ownership`` for another user's conversation, as a free id would
    be created.
    """

    principal: Principal
    user_id: str | None
    store: AsyncConversationStore
    nothing: AsyncConversationStore | None = None

    async def call(self, call: Callable[[AsyncConversationStore], Awaitable[T]]) -> T:
        try:
            return await call(self.store)
        except (ConversationOwnershipError, MemoryStoreOwnershipError):
            if self.nothing is None:
                raise
            return await call(self.nothing)

    async def create(
        self, conversation_id: str, call: Callable[[AsyncConversationStore], Awaitable[T]]
    ) -> T:
        """A call that creates the conversation it names where it is free. An id another user
        holds answers 409 ``conversation_ownership``: conversation ids are one namespace, so
        such a write cannot pass for one on a missing id, which it would create."""
        try:
            return await call(self.store)
        except ConversationOwnershipError:
            raise ApiError(
                409,
                "conversation_ownership",
                f"conversation {conversation_id!r} is not yours: choose another id",
                argument="conversationId",
            ) from None


_FORWARDED = ("forwarded", "x-forwarded-for", "x-real-ip")


def _local(connection: HTTPConnection) -> bool:
    """Whether a client on this machine talks to the server itself: the peer is a loopback
    address and no proxy relayed the request. (A server that trusts forwarded headers takes
    the client from them; one naming a proxy says another client is behind it.)"""
    if any(name in connection.headers for name in _FORWARDED):
        return False
    host = connection.client.host if connection.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Context:
    """What the endpoints share: the stores and how to authenticate."""

    def __init__(self, store: AsyncConversationStore, auth: Authenticator | None) -> None:
        self.store = store
        # Calls made for a user: strict, so an unowned conversation or memory store (an
        # agent's) is refused as another user's is; an admin's calls use `store`.
        self.scoped = AsyncConversationStore(
            sync=store.sync.with_strict_ownership(), inline=store.inline
        )
        # What a missing conversation or memory store answers, for `Caller.call`: the same
        # call on a store with the same limits that holds nothing (and is never written: no
        # call made there creates anything).
        self.nothing = AsyncConversationStore("memory://", limits=store.limits)
        self.auth = auth

    async def aclose(self) -> None:
        await self.nothing.aclose()

    async def principal(self, connection: HTTPConnection) -> Principal:
        if self.auth is None:  # no authentication: local use only
            if not _local(connection):
                raise ApiError(
                    403,
                    "forbidden",
                    "this server runs without authentication: it serves loopback clients"
                    " only, and no request relayed by a proxy",
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
        if user_id is None:
            return Caller(principal, None, self.store)
        return Caller(principal, user_id, self.scoped, self.nothing)


_AUTHENTICATED = "convostore_server.principal"
"""The key in a request's ``state`` of what ``AuthenticateFirst`` found."""


class AuthenticateFirst:
    """Authenticate each request from its head, before anything reads its body (FastAPI
    reads a body before the routes' dependencies run): the principal, or the refusal, waits
    in the request's ``state`` for ``caller_dependency``. A refused request that carries a
    body is answered at once and its connection closed: a stranger's body is never read."""

    def __init__(self, app: ASGIApp, ctx: Context) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        found: Principal | ApiError
        try:
            found = await self.ctx.principal(connection)
        except ApiError as refused:
            headers = connection.headers
            if headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in headers:
                closing = {**refused.headers, "Connection": "close"}
                await error_response(refused.status, refused.detail, closing)(scope, receive, send)
                return
            found = refused
        scope.setdefault("state", {})[_AUTHENTICATED] = found
        await self.app(scope, receive, send)


def caller_of(ctx: Context, scope: Scope, as_user: str | None) -> Caller:
    """The request's ``Caller`` (``as_user``: the ``userId`` asked), or the refusal
    ``AuthenticateFirst`` found, raised."""
    found = scope["state"][_AUTHENTICATED]  # by AuthenticateFirst
    if isinstance(found, ApiError):
        raise found
    return ctx.caller(found, as_user)


def authenticated(scope: Scope) -> bool:
    """Whether ``AuthenticateFirst`` found a principal for this request."""
    return isinstance(scope.get("state", {}).get(_AUTHENTICATED), Principal)


class _DeclaredBearer(HTTPBearer):
    """Bearer auth as the OpenAPI document declares it; ``AuthenticateFirst`` has read the
    token already, so this reads nothing."""

    async def __call__(self, request: Request) -> None:  # type: ignore[override]
        return None


def caller_dependency(ctx: Context) -> Any:
    """The dependency giving each endpoint its ``Caller`` (and declaring bearer auth)."""
    bearer = _DeclaredBearer(
        auto_error=False,
        scheme_name="HTTPBearer",  # the document's name of the scheme
        description="A token of the server's token table",
    )

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
        return caller_of(ctx, connection.scope, as_user)

    return Annotated[Caller, Depends(caller)]


def routes(router: APIRouter, Who: Any) -> None:
    @router.get("/me", response_model=Me, tags=["principal"])
    async def get_me(*, who: Who) -> Response:
        """Who the token is for (a user, or an admin): what a front-end asks first."""
        principal = who.principal
        return json_response(Me(user_id=principal.user_id, admin=principal.admin), _ME)
