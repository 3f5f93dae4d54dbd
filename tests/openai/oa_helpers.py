"""A scripted model, a function tool and the three ways to run an agent, for the Runner tests."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, Runner, RunResult, RunResultStreaming, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

RUNNERS = ["run", "run_sync", "run_streamed"]


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 22C in {city}"


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (needs a human's approval)."""
    return f"deleted {path}"


def reasoning(item_id: str, text: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=item_id, type="reasoning", summary=[Summary(text=text, type="summary_text")]
    )


def tool_turn(n: int, city: str, answer: str) -> list[list[Any]]:
    """Two model steps: reasoning + a get_weather call, then the final answer."""
    return [
        [
            reasoning(f"rs_{n}", "need the weather"),
            function_call("get_weather", {"city": city}, call_id=f"call_{n}", item_id=f"fc_{n}"),
        ],
        [assistant_message(answer, item_id=f"msg_{n}")],
    ]


def agent_for(model: ScriptedModel, **options: Any) -> Agent[Any]:
    return Agent(name="assistant", model=model, tools=[get_weather, delete_file], **options)


def _run_sync(agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, input, **kwargs)
    finally:
        loop.close()


async def run_agent(method: str, agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
    """Run ``agent`` with ``Runner.run``, ``run_sync`` (on a thread) or ``run_streamed``."""
    if method == "run":
        return await Runner.run(agent, input, **kwargs)
    if method == "run_sync":
        return await asyncio.to_thread(_run_sync, agent, input, **kwargs)
    result: RunResultStreaming = Runner.run_streamed(agent, input, **kwargs)
    async for _ in result.stream_events():
        pass
    return result
