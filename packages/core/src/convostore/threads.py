"""The bridge from async code to the blocking engine, shared by the async store and adapters."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.lowlevel
import anyio.to_thread
import sniffio

from .backends.base import WouldBlock

if TYPE_CHECKING:
    from .backends.base import Backend

T = TypeVar("T")


class _Settled(asyncio.Future[Any]):
    """A call's outcome on its caller's loop. It refuses cancellation: a task cancelled
    while awaiting it waits for the call, then raises ``CancelledError`` (asyncio's ``Task``
    cancels what it awaits, and where that refuses, throws the cancellation once it is done),
    the call's result or error retrieved and dropped."""

    def cancel(self, msg: Any = None) -> bool:
        return False


_Item = tuple[asyncio.AbstractEventLoop, _Settled, contextvars.Context, Callable[[], Any]]


class _Workers:
    """Threads running blocking calls for event loops, started on demand up to ``most``
    (as the loop's default executor, ``min(32, cores + 4)``), fed by one queue; a call's
    outcome goes back with ``call_soon_threadsafe``. Half the CPU of ``run_in_executor``
    behind ``asyncio.shield``: no ``concurrent.futures.Future`` and its lock, no second
    future to chain nor third to shield."""

    def __init__(self) -> None:
        self.most = min(32, (os.cpu_count() or 1) + 4)
        self.reset()
        os.register_at_fork(after_in_child=self.reset)  # the parent's threads are not there

    def reset(self) -> None:
        self.lock = threading.Lock()
        self.calls: SimpleQueue[_Item] = SimpleQueue()
        self.idle: list[None] = []  # one entry a waiting worker (append and pop are atomic)
        self.started = 0

    def submit(self, item: _Item) -> None:
        if not self.idle and self.started < self.most:
            with self.lock:
                if self.started < self.most:
                    self.started += 1
                    threading.Thread(target=self.work, name="convostore", daemon=True).start()
        self.calls.put(item)

    def work(self) -> None:
        while True:
            self.idle.append(None)
            item = self.calls.get()
            self.idle.pop()
            self.run(item)
            del item  # nothing is kept while idle

    @staticmethod
    def run(item: _Item) -> None:
        loop, settled, context, call = item
        try:
            result = context.run(call)
        except BaseException as exc:  # the caller's, raised on its loop
            _report(loop, settled.set_exception, exc)
        else:
            _report(loop, settled.set_result, result)


def _report(loop: asyncio.AbstractEventLoop, settle: Callable[[Any], None], value: Any) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for the call
        loop.call_soon_threadsafe(settle, value)


_workers = _Workers()


async def _hop(call: Callable[[], T]) -> T:
    """``call`` on a worker thread, awaited on the running asyncio loop, in a copy of the
    caller's context (a span of the caller's is then its parent)."""
    loop = asyncio.get_running_loop()
    settled = _Settled(loop=loop)
    _workers.submit((loop, settled, contextvars.copy_context(), call))
    result: T = await settled
    return result


async def run_in_thread(call: Callable[[], T]) -> T:
    """Run ``call`` on a worker thread and return its result, under asyncio or trio.

    A cancelled caller still waits for ``call`` to finish before the cancellation propagates
    (a write is never left in flight behind the caller's back), as ``anyio.to_thread`` does.
    The call runs in a copy of the caller's context, as anyio's does (a span of the caller's
    is then its parent).
    """
    if sniffio.current_async_library() != "asyncio":
        return await anyio.to_thread.run_sync(call)
    return await _hop(call)


async def run_sync(call: Callable[[], T], backend: Backend, *, inline: bool = True) -> T:
    """Run ``call`` (transactions on ``backend``, see ``Backend.without_waiting``) from async code.

    On an embedded database an ``inline`` call runs on the event loop when every lock it needs
    is free (it then costs less than the hop to a thread); when one is taken, or on a server
    database, it runs on a worker thread, so the loop never waits for a lock. Either way the
    call starts with a checkpoint: other tasks get their turn and a cancellation lands first.
    """
    on_asyncio = sniffio.current_async_library() == "asyncio"
    if on_asyncio:
        await asyncio.sleep(0)  # anyio's checkpoint under asyncio, without its dispatch
    else:
        await anyio.lowlevel.checkpoint()
    if inline and backend.inline:
        try:
            return backend.without_waiting(call)
        except WouldBlock:
            pass
    return await (_hop(call) if on_asyncio else anyio.to_thread.run_sync(call))
