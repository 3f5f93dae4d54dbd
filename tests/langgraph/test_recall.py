"""search_history_tool in a real ReAct agent (LangChain's create_agent, a scripted chat model
bound to the tool, the real ToolNode, the convostore checkpointer): LangGraph threads are
conversations, so the agent finds what its user said in an earlier thread, never what another
user said, sync and async, and pages with `after`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError
from convostore_langgraph import search_history_tool
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

QUERIES = {"Where is my parcel?": "order NUMBER", "Which code?": "door code", "Anything?": '""'}
"""What the scripted model searches for when asked each question (words the question lacks)."""


class ScriptedRecallModel(BaseChatModel):
    """A question of ``QUERIES`` calls search_history with its query; "next page" calls it
    again with the previous call's query and the ``after`` its answer ended with; after a tool
    result it answers with it; anything else is answered "Noted."."""

    @property
    def _llm_type(self) -> str:
        return "scripted-recall-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedRecallModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        text = str(last.content)
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"found: {text}")
        elif text == "next page":
            called = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls][-1]
            answered = [m for m in messages if isinstance(m, ToolMessage)][-1]
            after = str(answered.content).split('after="')[1].rstrip('".')
            reply = self._call({"query": called.tool_calls[0]["args"]["query"], "after": after})
        elif text in QUERIES:
            reply = self._call({"query": QUERIES[text]})
        else:
            reply = AIMessage("Noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @staticmethod
    def _call(args: dict[str, str]) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "search_history", "args": args, "id": "c1"}])


def agent(db: ConversationStore | AsyncConversationStore, **tool: Any) -> Any:
    checkpointer = (
        db.sync if isinstance(db, AsyncConversationStore) else db
    ).langgraph_checkpointer
    recall = search_history_tool(db, **{"user_id": "alice", **tool})
    return create_agent(ScriptedRecallModel(), [recall], checkpointer=checkpointer)


def turn(app: Any, thread: str, user: str, text: str) -> str:
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    messages = app.invoke({"messages": [HumanMessage(text)]}, config)["messages"]
    return str(messages[-1].content)


def test_the_agent_finds_what_its_user_said_in_another_thread(backend_url: str) -> None:
    with ConversationStore(backend_url) as db:
        app = agent(db)
        turn(app, "t-old", "alice", "My order number is A-7731; it never came.")
        turn(app, "t-chat", "alice", "The weather is nice.")
        turn(app, "t-bob", "bob", "My order number is B-9999.")
        answer = turn(app, "t-new", "alice", "Where is my parcel?")
        assert answer.startswith('found: 1 messages match "order NUMBER", newest first:\n')
        [hit] = answer.splitlines()[1:]
        assert hit.startswith("1. conversation t-old, ")
        assert hit.endswith(" UTC, user: My order number is A-7731; it never came.")
        # The tool's call and its answer are in the new thread, which is searchable in turn.
        found = db.search_messages(query="A-7731", user_id="alice").items
        assert {(h.conversation_id, h.message.role) for h in found} == {
            ("t-old", "user"),
            ("t-new", "tool"),
            ("t-new", "assistant"),
        }
        bob = turn(agent(db, user_id="bob"), "t-bob-2", "bob", "Where is my parcel?")
        assert "B-9999" in bob and "A-7731" not in bob and "t-old" not in bob


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # LangGraph's async graphs run on asyncio


@pytest.mark.anyio
async def test_async_pages_and_a_bad_query(backend_url: str) -> None:
    async with AsyncConversationStore(backend_url) as db:
        for n in range(3):
            turn(agent(db), f"t{n}", "alice", f"door code {n}")
        app = agent(db, limit=2)
        config = {"configurable": {"thread_id": "ask", "user_id": "alice"}}

        async def ask(text: str) -> str:
            out = await app.ainvoke({"messages": [HumanMessage(text)]}, config)
            return str(out["messages"][-1].content)

        first = (await ask("Which code?")).splitlines()
        assert [line.split(",")[0] for line in first[1:3]] == [
            "1. conversation t2",
            "2. conversation t1",
        ]
        assert first[-1].startswith('More matches: call search_history with after="')
        second = (await ask("next page")).splitlines()
        assert second[1].startswith("1. conversation t0, ")
        assert len(second) == 2  # no more pages
        assert await ask("Anything?") == "found: Error: query has no terms (it is empty or blank)"


def test_the_tool_is_bound_to_a_user_and_checks_its_arguments() -> None:
    with ConversationStore("memory://") as db:
        for bad, argument in [
            ({"user_id": None}, "user_id"),
            ({"user_id": "a", "conversation_id": "\x00"}, "conversation_id"),
            ({"user_id": "a", "limit": 0}, "limit"),
        ]:
            with pytest.raises(MemoryValidationError) as caught:
                search_history_tool(db, **bad)
            assert caught.value.argument == argument
        with pytest.raises(MemoryValidationError) as caught:
            search_history_tool("memory://", user_id="a")  # type: ignore[arg-type]
        assert caught.value.argument == "store"
