"""The bridge from async code to the blocking engine, shared by the async store and adapters."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import anyio.lowlevel
import anyio.to_thread
import sniffio

from .backends.base import WouldBlock

if TYPE_CHECKING:
    from .backends.base import Backend

T = TypeVar("T")


async def run_in_thread(call: Callable[[], T]) -> T:
    """Run ``call`` on a worker thread and return its result, under asyncio or trio.

    A cancelled caller still waits for ``call`` to finish before the cancellation propagates
    (a write is never left in flight behind the caller's back), as ``anyio.to_thread`` does.
    Under asyncio the loop's executor is used directly: it costs half of anyio's hop. The call
    runs in a copy of the caller's context, as anyio's does (a span of the caller's is then
    its parent).
    """
    if sniffio.current_async_library() != "asyncio":
        return await anyio.to_thread.run_sync(call)
    context = contextvars.copy_context()
    future = asyncio.get_running_loop().run_in_executor(None, context.run, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            try:
                await asyncio.wait([future])
            except asyncio.CancelledError:
                continue  # still finishing the call; the cancellation is already on its way
        if not future.cancelled():
            future.exception()  # the caller is gone: its call's error goes with it, unreported
        raise


async def run_sync(call: Callable[[], T], backend: Backend, *, inline: bool = True) -> T:
    """Run ``call`` (transactions on ``backend``, see ``Backend.without_waiting``) from async code.

    On an embedded database an ``inline`` call runs on the event loop when every lock it needs
    is free (it then costs less than the hop to a thread); when one is taken, or on a server
    database, it runs on a worker thread, so the loop never waits for a lock. Either way the
    call starts with a checkpoint: other tasks get their turn and a cancellation lands first.
    """
    await anyio.lowlevel.checkpoint()
    if inline and backend.inline:
        try:
            return backend.without_waiting(call)
        except WouldBlock:
            pass
    return await run_in_thread(call)
