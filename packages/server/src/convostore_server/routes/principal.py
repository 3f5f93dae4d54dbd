"""Who is calling: the request's principal (authenticated here, or refused), the ``Caller``
every endpoint gets, and ``GET /me``."""

import inspect
import ipaddress
from dataclasses import dataclass
from typing import Annotated, Any

from convostore import AsyncConversationStore
from fastapi import APIRouter, Depends, Query
from fastapi.security import HTTPBearer
from pydantic import TypeAdapter
from starlette.requests import HTTPConnection
from starlette.responses import Response

from ..auth import Authenticator, Principal
from ..errors import ApiError
from .common import Out, json_response


class Me(Out):
    """Who the request's credentials are for: a user (``userId``) or an admin."""

    user_id: str | None = None
    admin: bool


_ME = TypeAdapter(Me)


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


class Context:
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


def caller_dependency(ctx: Context) -> Any:
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


def routes(router: APIRouter, Who: Any) -> None:
    @router.get("/me", response_model=Me, tags=["principal"])
    async def me(*, who: Who) -> Response:
        """Who the token is for (a user, or an admin): what a front-end asks first."""
        principal = who.principal
        return json_response(Me(user_id=principal.user_id, admin=principal.admin), _ME)
