"""Atomic batches, pop_item against concurrent appends, threads and processes on one session."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from convostore import AsyncConversationStore, ConversationStore, Limits, MemoryQuotaExceededError
from convostore_openai import ConvostoreSession
from oa_worker import append, pop, processes

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]


async def test_a_batch_over_the_quota_stores_nothing(backend_url: str) -> None:
    limits = Limits(max_messages_per_conversation=5)
    async with AsyncConversationStore(backend_url, limits=limits) as store:
        session = ConvostoreSession("quota", store=store)
        await session.add_items([{"role": "user", "content": str(i)} for i in range(3)])
        with pytest.raises(MemoryQuotaExceededError, match="limit of 5 messages"):
            await session.add_items([{"role": "user", "content": f"x{i}"} for i in range(3)])
        assert [i["content"] for i in await session.get_items()] == ["0", "1", "2"]


async def test_pop_under_concurrent_adds_never_duplicates_or_loses(make_session: Make) -> None:
    session = make_session("race")
    added = [f"w{w}-{b}-{i}" for w in range(3) for b in range(15) for i in range(4)]
    popped: list[Any] = []
    done = threading.Event()

    def writer(w: int) -> None:
        for b in range(15):
            batch = [{"role": "user", "content": f"w{w}-{b}-{i}"} for i in range(4)]
            asyncio.run(session.add_items(batch))

    def popper() -> None:
        async def loop() -> None:
            while not done.is_set():
                item = await session.pop_item()
                if item is not None:
                    popped.append(item["content"])  # type: ignore[typeddict-item]

        asyncio.run(loop())

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    poppers = [threading.Thread(target=popper) for _ in range(2)]
    for t in writers + poppers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in poppers:
        t.join()
    left = [i["content"] for i in await session.get_items()]
    assert not [c for c, n in Counter(popped).items() if n > 1]
    assert sorted(popped + left) == sorted(added)


@pytest.mark.slow
def test_processes_appending_and_popping_lose_nothing(shared_url: str) -> None:
    context = processes()
    go = context.Barrier(4)
    out = context.Queue()
    procs = [
        context.Process(
            target=append, args=(shared_url, "shared", f"p{p}", 25, 4), kwargs={"go": go}
        )
        for p in range(3)
    ]
    procs.append(context.Process(target=pop, args=(shared_url, "shared", 60, go, out)))
    for proc in procs:
        proc.start()
    popped = [i["content"] for i in out.get(timeout=120)]
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    with ConversationStore(shared_url) as store:
        left = [
            i["content"] for i in asyncio.run(ConvostoreSession("shared", store=store).get_items())
        ]
    added = [f"p{p}-{b}-{i}" for p in range(3) for b in range(25) for i in range(4)]
    assert len(popped) == len(set(popped))
    assert sorted(popped + left) == sorted(added)
    # Each batch still whole was stored as one block, in caller order.
    for p in range(3):
        for b in range(25):
            mine = [c for c in left if c.startswith(f"p{p}-{b}-")]
            if len(mine) == 4:
                at = left.index(mine[0])
                assert left[at : at + 4] == [f"p{p}-{b}-{i}" for i in range(4)]


async def test_cancelled_add_items_is_all_or_nothing(make_session: Make) -> None:
    session = make_session("cancel")
    batch = [{"role": "user", "content": f"m{i}"} for i in range(50)]
    task = asyncio.ensure_future(session.add_items(batch))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = await session.get_items()
    assert stored in ([], batch)
    await session.add_items([{"role": "user", "content": "after"}])
    assert (await session.get_items())[-1] == {"role": "user", "content": "after"}
