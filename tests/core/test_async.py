"""The async facade: the same operations, awaited, under asyncio and under trio."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from convostore import (
    AsyncConversationStore,
    ConversationStore,
    MemoryValidationError,
    aprompt_context,
)
from convostore.spi import run_in_thread

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_async_store_does_everything_the_sync_one_does(
    astore: AsyncConversationStore,
) -> None:
    mid = await astore.append_message(conversation_id="c", role="user", content="hi", user_id="u")
    await astore.append_messages(
        conversation_id="c", messages=[{"role": "assistant", "content": "hello"}]
    )
    messages = await astore.get_messages(conversation_id="c")
    assert [m.content for m in messages] == ["hi", "hello"]
    assert (await astore.get_history(conversation_id="c", last=1))[0].content == "hello"
    updated = await astore.update_message(conversation_id="c", message_id=mid, content="hi!")
    assert updated.content == "hi!"
    meta = await astore.update_conversation(conversation_id="c", metadata={"title": "t"})
    assert meta.metadata == {"title": "t"}
    assert (await astore.get_conversation(conversation_id="c")) == meta
    page = await astore.list_conversations(user_id="u")
    assert [c.conversation_id for c in page.items] == ["c"]
    assert astore.to_openai_input(messages) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    popped = await astore.pop_message(conversation_id="c")
    assert popped is not None and popped.content == "hello"
    await astore.delete_message(conversation_id="c", message_id=mid)
    await astore.clear_messages(conversation_id="c")
    assert (await astore.delete_user_data(user_id="u")) == 1
    await astore.delete_conversation(conversation_id="c")
    assert (await aprompt_context(astore, conversation_id="c")).messages == []
    with pytest.raises(MemoryValidationError, match="limit"):
        await astore.get_messages(conversation_id="c", limit=0)


async def test_concurrent_tasks_append_in_one_order(astore: AsyncConversationStore) -> None:
    async def writer(n: int) -> None:
        for i in range(20):
            await astore.append_message(conversation_id="c", role="user", content=[n, i])

    async with anyio.create_task_group() as tg:
        for n in range(5):
            tg.start_soon(writer, n)
    history = await astore.get_history(conversation_id="c")
    assert len(history) == 100
    for n in range(5):
        assert [m.content[1] for m in history if m.content[0] == n] == list(range(20))


async def test_async_context_manager_closes(backend_url: str) -> None:
    async with AsyncConversationStore(backend_url) as astore:
        await astore.append_message(conversation_id="c", role="user", content="x")
    assert isinstance(astore.sync, ConversationStore)


async def test_a_cancelled_call_finishes_its_write_before_the_cancellation(
    backend_url: str,
) -> None:
    """Cancellation cannot stop a write midway: it propagates once the write has settled, so
    what the caller can read afterwards never changes behind its back."""
    entered, release = threading.Event(), threading.Event()

    def slow_clock() -> int:
        entered.set()
        release.wait(10)
        return 1_000

    # inline=False: this call takes a worker thread, as a contended one does.
    async with AsyncConversationStore(backend_url, clock=slow_clock, inline=False) as astore:
        writer_scope = anyio.CancelScope()
        finished: list[bool] = []

        async def writer() -> None:
            with writer_scope:
                await astore.append_message(conversation_id="c", role="user", content="x")
                await anyio.sleep(0)  # trio delivers the cancellation at the next checkpoint
            finished.append(writer_scope.cancelled_caught)

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await anyio.to_thread.run_sync(entered.wait)
            writer_scope.cancel()
            await anyio.sleep(0.05)
            assert finished == []  # cancelled, but still waiting for its write
            release.set()
        assert finished == [True]
        messages = await astore.get_messages(conversation_id="c")
        assert [m.content for m in messages] == ["x"]


def _on_loop_thread() -> tuple[list[bool], Callable[[Any, Any], None]]:
    """A fold that records whether the transaction ran on the calling (event loop) thread."""
    loop_thread = threading.current_thread()
    seen: list[bool] = []

    def fold(metadata: Any, added: Any) -> None:
        seen.append(threading.current_thread() is loop_thread)

    return seen, fold


async def test_an_uncontended_small_call_runs_on_the_event_loop(backend_url: str) -> None:
    """On SQLite a free write runs inline (cheaper than a thread hop); PostgreSQL and
    ``inline=False`` always take a worker thread."""
    seen, fold = _on_loop_thread()
    embedded = not backend_url.startswith("postgresql")
    for inline in (True, False):
        async with AsyncConversationStore(backend_url, inline=inline) as astore:
            await astore.append_messages(
                conversation_id=f"c{inline}", messages=[{"role": "user", "content": "x"}], fold=fold
            )
    assert seen == [embedded, False]


async def test_a_caller_cancelled_before_the_call_writes_nothing(backend_url: str) -> None:
    async with AsyncConversationStore(backend_url) as astore:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await astore.append_message(conversation_id="c", role="user", content="x")
        assert scope.cancelled_caught
        assert await astore.get_messages(conversation_id="c") == []


@pytest.mark.parametrize("holder", ["same store", "other store", "foreign connection"])
async def test_a_call_that_would_wait_takes_a_thread_and_the_loop_keeps_running(
    tmp_path: Path, holder: str
) -> None:
    """Whoever holds the write lock (another thread of this store, another convostore on the
    file, or a program that ignores convostore's writer queue), the loop is never blocked:
    the call moves to a thread, waits there, and lands after the holder's write."""
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    seen, fold = _on_loop_thread()
    holding, release = threading.Event(), threading.Event()
    with ConversationStore(url) as sync:
        other = ConversationStore(url) if holder == "other store" else sync

        def hold() -> None:
            if holder == "foreign connection":
                conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
                conn.execute("BEGIN IMMEDIATE")
                holding.set()
                release.wait(10)
                conn.execute("COMMIT")
                conn.close()
                return

            def wait(metadata: Any, added: Any) -> None:
                holding.set()
                release.wait(10)

            other.append_messages(
                conversation_id="c", messages=[{"role": "user", "content": "first"}], fold=wait
            )

        astore = AsyncConversationStore(sync=sync)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while not release.is_set():
                ticks += 1
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, hold)
            await anyio.to_thread.run_sync(holding.wait)
            tg.start_soon(ticker)

            async def release_later() -> None:
                await anyio.sleep(0.2)
                release.set()

            tg.start_soon(release_later)
            await astore.append_messages(
                conversation_id="c", messages=[{"role": "user", "content": "second"}], fold=fold
            )
        if other is not sync:
            other.close()
        assert ticks >= 10  # the loop ran while the call waited
        assert seen == [False]  # on a worker thread
        contents = [m.content for m in sync.get_history(conversation_id="c")]
        assert contents == (["second"] if holder == "foreign connection" else ["first", "second"])


def test_a_cancelled_call_that_fails_leaves_no_error_unretrieved() -> None:
    """The caller is gone, and its call's error with it: asyncio must not report it as a
    'Future exception was never retrieved' (a server's event stream, cancelled by its
    client during a read that then failed, filled the log with those). A plain asyncio
    loop: the task is cancelled as a server cancels it."""
    reported: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def failing() -> None:
        entered.set()
        release.wait(10)
        raise MemoryValidationError("refused")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
        task = asyncio.ensure_future(run_in_thread(failing))
        await loop.run_in_executor(None, entered.wait)
        task.cancel()
        await asyncio.sleep(0)  # the task takes its cancellation, and waits for the call
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        gc.collect()

    asyncio.run(main())
    assert reported == []


def test_a_forked_child_hops_on_threads_of_its_own() -> None:
    """The bridge's worker threads are not in a forked child: its first call starts its own
    (else the call would wait in the queue for threads that are not there, for ever)."""

    async def many() -> None:  # as many workers as the bridge starts, then idle
        await asyncio.gather(*(run_in_thread(lambda: time.sleep(0.02)) for _ in range(40)))

    asyncio.run(many())
    time.sleep(0.05)
    pid = os.fork()
    if pid == 0:  # the child: killed by the alarm if the call never runs
        code = 1
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(10)
            code = 0 if asyncio.run(run_in_thread(lambda: 7)) == 7 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_call_whose_loop_closed_meanwhile_leaves_its_worker_serving() -> None:
    """A loop closed under a call (its caller gone without waiting): the call's outcome has
    nowhere to go and is dropped, and the worker that ran it goes on serving."""
    failures: list[BaseException] = []
    hook, threading.excepthook = threading.excepthook, lambda args: failures.append(args.exc_value)
    entered, release = threading.Event(), threading.Event()

    def held() -> int:
        entered.set()
        release.wait(10)
        return 1

    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)  # the task left pending on purpose
    try:
        task = loop.create_task(run_in_thread(held))
        loop.run_until_complete(asyncio.wait([task], timeout=0.05))
        assert entered.is_set() and not task.done()
        loop.close()
        release.set()
        assert asyncio.run(run_in_thread(lambda: 2)) == 2
        time.sleep(0.05)
    finally:
        threading.excepthook = hook
    assert failures == []
