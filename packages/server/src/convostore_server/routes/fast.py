"""Fast lanes: the busiest endpoints answer a plain request without FastAPI's parameter
machinery (a fifth of such a request's time), by the endpoint's own code; any other request
takes the route's regular handler, so validation, errors and the OpenAPI document stay
FastAPI's. A lane only reads the request: it answers, or gives it to the handler untouched
(a body it read is kept for the handler)."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

FastLane = Callable[[Request], Awaitable[Response | None]]
"""A request's answer, or None: the route's regular handler answers it."""

F = TypeVar("F", bound=Callable[..., Any])


def with_lane(lane: FastLane) -> Callable[[F], F]:
    """Give an endpoint a fast lane (under its route's decorator)."""

    def mark(endpoint: F) -> F:
        setattr(endpoint, "fast_lane", lane)  # noqa: B010 - a function's attribute
        return endpoint

    return mark


class FastRoute(APIRoute):
    """An ``APIRoute`` that first offers a request to its endpoint's fast lane, if any."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()
        lane: FastLane | None = getattr(self.endpoint, "fast_lane", None)
        if lane is None:
            return handler

        async def served(request: Request) -> Response:
            response = await lane(request)
            return await handler(request) if response is None else response

        return served


def plain_query(request: Request, names: frozenset[str]) -> dict[str, str] | None:
    """The query's parameters when it is plain: ASCII with nothing to decode (no ``%``, no
    ``+``), each parameter once, as ``name=value``, among ``names``; else None."""
    raw: bytes = request.scope.get("query_string", b"")
    if not raw:
        return {}
    if b"%" in raw or b"+" in raw or not raw.isascii():
        return None
    found: dict[str, str] = {}
    for pair in raw.decode("ascii").split("&"):
        name, equals, value = pair.partition("=")
        if not equals or name not in names or name in found:
            return None
        found[name] = value
    return found


def path_id(request: Request, name: str) -> str | None:
    """The id in the path parameter ``name`` as sent, or None where it is given in the
    query instead (the path holds ``-``)."""
    value = request.path_params.get(name)
    return None if value is None or value == "-" else str(value)
