"""A scripted CrewAI model: answers from a script per agent role, never touches the network,
and keeps every prompt it was sent so tests can check what the model saw."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from crewai import BaseLLM
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import llm_call_context
from pydantic import Field, PrivateAttr

Answer = str | list[dict[str, Any]] | Callable[[list[dict[str, Any]]], Any]


def final(text: str) -> str:
    """A ReAct final answer."""
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


def act(tool: str, **arguments: Any) -> str:
    """A ReAct tool use."""
    return f"Thought: I should use a tool\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def tool_call(call_id: str, tool: str, **arguments: Any) -> list[dict[str, Any]]:
    """A native (function-calling) tool call."""
    return [{"id": call_id, "function": {"name": tool, "arguments": json.dumps(arguments)}}]


class ScriptedLLM(BaseLLM):
    """``script`` maps an agent role to its answers, used in order; a callable answer gets
    the messages. Calls without an agent come from CrewAI's memory and get JSON answers."""

    script: dict[str, list[Any]] = Field(default_factory=dict)
    native_tools: bool = False
    fail_roles: set[str] = Field(default_factory=set)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _seen: list[tuple[str | None, list[dict[str, Any]]]] = PrivateAttr(default_factory=list)

    def supports_function_calling(self) -> bool:
        return self.native_tools

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 128_000

    @property
    def seen(self) -> list[tuple[str | None, list[dict[str, Any]]]]:
        """(agent role or None, messages) of every call, in order."""
        return list(self._seen)

    def prompts_of(self, role: str) -> list[str]:
        """Every message text the agent ``role`` was sent, one string per call."""
        return [
            "\n".join(str(m.get("content")) for m in messages)
            for r, messages in self._seen
            if r == role
        ]

    def call(  # noqa: PLR0917 - BaseLLM's signature
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        role = getattr(from_agent, "role", None)
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            with self._lock:
                self._seen.append((role, [dict(m) for m in messages]))
                if role in self.fail_roles:
                    raise RuntimeError(f"model exploded for {role}")
                if role is None:
                    answer: Any = _memory_answer(messages)
                else:
                    queue = self.script.get(role)
                    if not queue:
                        raise AssertionError(f"the script has no answer left for {role!r}")
                    answer = queue.pop(0)
            if callable(answer):
                answer = answer(messages)
            self._track_token_usage_internal(
                {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            )
            self._emit_call_completed_event(
                response=answer,
                call_type=LLMCallType.LLM_CALL
                if isinstance(answer, str)
                else LLMCallType.TOOL_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
            )
            return answer

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)


def _memory_answer(messages: list[dict[str, Any]]) -> str:
    """CrewAI memory's analysis calls: extract the result as one fact, file it under /facts."""
    system = str(messages[0].get("content", "")) if messages else ""
    user = str(messages[-1].get("content", "")) if messages else ""
    if system.startswith("You extract"):
        found = re.search(r"Final Answer: (.*)", user) or re.search(r"Result: (.*)", user)
        return json.dumps({"memories": [found.group(1).strip() if found else user[:200]]})
    if system.startswith("You analyze content"):
        return json.dumps(
            {
                "suggested_scope": "/facts",
                "categories": ["facts"],
                "importance": 0.8,
                "extracted_metadata": {"entities": [], "dates": [], "topics": []},
            }
        )
    if system.startswith("You analyze a query"):
        query = re.search(r"Query: (.*)", user)
        text = query.group(1).strip() if query else user
        return json.dumps(
            {
                "keywords": [],
                "suggested_scopes": [],
                "complexity": "simple",
                "recall_queries": [text[:200]],
            }
        )
    if system.startswith("You are comparing"):
        return json.dumps({"actions": [], "insert_new": True, "insert_reason": "new"})
    return "noted"
