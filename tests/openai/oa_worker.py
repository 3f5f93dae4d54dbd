"""Work done in other processes for the multi-process tests: appending to, popping from, or
running a second turn on a session. Each runs in a process of its own (``processes()``)."""

from __future__ import annotations

import asyncio
import multiprocessing
from multiprocessing.context import BaseContext
from multiprocessing.synchronize import Barrier
from typing import Any

from convostore_openai import ConvostoreSession


def processes() -> BaseContext:
    """A forkserver context that has imported the Agents SDK once: each worker is a fresh
    process (no state of the test's process) that starts in milliseconds."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["convostore_openai", "agents.testing", "oa_helpers"])
    return context


def append(url: str, session_id: str, name: str, batches: int, size: int, *, go: Barrier) -> None:
    async def run() -> None:
        async with ConvostoreSession(session_id, url=url) as session:
            go.wait()
            for b in range(batches):
                await session.add_items(
                    [{"role": "user", "content": f"{name}-{b}-{i}"} for i in range(size)]
                )

    asyncio.run(run())


def pop(url: str, session_id: str, times: int, go: Barrier, out: Any) -> None:
    async def run() -> list[Any]:
        async with ConvostoreSession(session_id, url=url) as session:
            go.wait()
            popped = [await session.pop_item() for _ in range(times)]
        return [p for p in popped if p is not None]

    out.put(asyncio.run(run()))


def second_turns(url: str, jobs: list[tuple[str, str, int | None]], text: str, out: Any) -> None:
    """For each (session_id, runner method, max_items): a turn whose model answers after one
    tool call; reports the model's inputs and the final output."""
    from agents import set_tracing_disabled
    from agents.testing import ScriptedModel
    from oa_helpers import agent_for, run_agent, tool_turn

    set_tracing_disabled(True)

    async def run() -> list[dict[str, Any]]:
        reports = []
        for session_id, method, max_items in jobs:
            async with ConvostoreSession(session_id, url=url, max_items=max_items) as session:
                model = ScriptedModel(tool_turn(2, "Rome", "Rome is sunny too."))
                result = await run_agent(method, agent_for(model), text, session=session)
            inputs = [call.input for call in model.calls]
            reports.append({"final": result.final_output, "inputs": inputs})
        return reports

    out.put(asyncio.run(run()))
