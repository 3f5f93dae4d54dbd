"""Health probes: ``GET /healthz`` (the process answers) and ``GET /readyz`` (the database
answers within a bound and holds the core's tables at this install's version).

Both are unauthenticated and say nothing but ``ok`` or ``unavailable``: no version, no URL, no
error text (a probe's answer is public). One readiness check runs at a time: probes arriving
while it runs wait for it, so a database that hangs holds one worker thread, not one per probe.
"""

import asyncio
import math
from typing import Any, Literal

from convostore import AsyncConversationStore, MemoryValidationError
from fastapi import APIRouter
from pydantic import TypeAdapter
from starlette.responses import Response

from .common import Out, json_response

DEFAULT_READY_TIMEOUT = 2.0
"""Seconds ``/readyz`` waits for the database before it answers 503."""


class Health(Out):
    """A probe's answer: ``ok``, or ``unavailable`` (with status 503)."""

    status: Literal["ok", "unavailable"]


_HEALTH = TypeAdapter(Health)
_NO_STORE = {"Cache-Control": "no-store"}


def _answer(ok: bool) -> Response:
    response = json_response(
        Health(status="ok" if ok else "unavailable"), _HEALTH, 200 if ok else 503
    )
    response.headers.update(_NO_STORE)
    return response


def check_timeout(seconds: float) -> float:
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds <= 0
    ):
        raise MemoryValidationError(
            f"ready_timeout must be a number of seconds above 0, got {seconds!r}",
            argument="ready_timeout",
        )
    return float(seconds)


class Readiness:
    """The one readiness check in flight, shared by the probes that arrive while it runs."""

    def __init__(self, store: AsyncConversationStore, timeout: float) -> None:
        self.store = store
        self.timeout = timeout
        self._running: asyncio.Task[bool] | None = None

    async def ready(self) -> bool:
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self.store.ready())
        try:
            return await asyncio.wait_for(asyncio.shield(self._running), self.timeout)
        except TimeoutError:
            return False


def routes(router: APIRouter, readiness: Readiness) -> None:
    probes: dict[int | str, dict[str, Any]] = {
        200: {"model": Health},
        503: {"model": Health, "description": "Not ready"},
    }

    @router.get("/healthz", response_model=Health, tags=["health"], responses=probes)
    async def get_healthz() -> Response:
        """Liveness: the process answers (nothing else is checked). No token needed."""
        return _answer(True)

    @router.get("/readyz", response_model=Health, tags=["health"], responses=probes)
    async def get_readyz() -> Response:
        """Readiness: the database answers within the bound (``ready_timeout``, 2 s by
        default) and holds the core's tables at this install's version; else 503. No token
        needed."""
        return _answer(await readiness.ready())
