"""Conversations as each framework writes them, written from the test's process (a writer
that is not the server): the Claude one through the Claude adapter's session store, the
others through the core in the shapes their adapters store (their frameworks are not in the
server's environment)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
from convostore import ConversationStore, Message
from convostore_claude import ConvostoreSessionStore

# A 1x1 PNG, as an image block holds it.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def claude_session(url: str, user_id: str, session_id: str) -> str:
    """A Claude Agent SDK turn mirrored by ``ConvostoreSessionStore``: a prompt with an image,
    a Read tool call and its result, the answer. Returns the conversation id."""

    async def run() -> str:
        key = {"project_key": "web-project", "session_id": session_id}
        entry = {"sessionId": session_id}
        async with ConvostoreSessionStore(url, user_id=user_id) as store:
            await store.append(
                key,  # type: ignore[arg-type]
                [
                    {**entry, "type": "user", "uuid": f"{session_id}-u1",
                     "message": {"role": "user", "content": [
                         {"type": "text", "text": "What does this README say?"},
                         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
                     ]}},
                    {**entry, "type": "assistant", "uuid": f"{session_id}-a1",
                     "message": {"role": "assistant", "content": [
                         {"type": "text", "text": "Let me read it."},
                         {"type": "tool_use", "id": "toolu_read_1", "name": "Read",
                          "input": {"file_path": "README.md", "limit": 40}},
                     ]}},
                    {**entry, "type": "user", "uuid": f"{session_id}-u2",
                     "message": {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": "toolu_read_1",
                          "content": "# Demo\nInstall with pip."},
                     ]}},
                    {**entry, "type": "assistant", "uuid": f"{session_id}-a2",
                     "message": {"role": "assistant", "content": [
                         {"type": "text", "text": "It explains how to install."},
                     ]}},
                ],
            )  # fmt: skip
            return store.conversation_id(key)  # type: ignore[arg-type]

    # On a thread of its own: Playwright's sync API keeps an event loop running on this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, run).result()


def _openai_mark(session_id: str) -> Any:
    def fold(metadata: dict[str, Any] | None, added: list[Message]) -> dict[str, Any] | None:
        info = {"session_id": session_id}
        mark = (metadata or {}).get("openai_agents")
        return None if mark == info else {"openai_agents": info}

    return fold


def openai_session(store: ConversationStore, cid: str, user_id: str) -> None:
    """An OpenAI Agents SDK run as ``ConvostoreSession`` stores it: one Responses item per
    message (reasoning, a function call and its output), the conversation marked."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look it up"}]},
        {"type": "function_call", "call_id": "call_oslo", "name": "get_weather",
         "arguments": json.dumps({"city": "Oslo", "unit": "C"}), "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_oslo", "output": "Cold, -3C"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "It is cold in Oslo.", "annotations": []}]},
    ]  # fmt: skip
    roles = {"function_call_output": "tool", "message": "assistant", "reasoning": "assistant"}
    messages: list[Any] = [
        {"role": roles.get(item.get("type", ""), item.get("role", "assistant")), "content": item}
        for item in items
    ]
    store.append_messages(
        conversation_id=cid, messages=messages, user_id=user_id, fold=_openai_mark(cid)
    )


def crewai_run(store: ConversationStore, cid: str, user_id: str) -> None:
    """A crew's run as ``convostore_crewai.record`` stores it: the user's inputs, a tool call
    (Chat Completions shape in metadata) and its result, the task's output, the run's status."""
    common = {"agent": "Researcher", "run_id": "run-1", "task": "Find the capital"}
    store.append_messages(
        conversation_id=cid,
        user_id=user_id,
        messages=[
            {"role": "user", "content": "topic: France",
             "metadata": {"crewai": "user_input", "inputs": {"topic": "France"}, "run_id": "run-1"}},
            {"role": "assistant", "content": "", "metadata": {
                "crewai": "tool_call", **common,
                "tool_calls": [{"id": "call_search_1", "type": "function", "function": {
                    "name": "search", "arguments": json.dumps({"query": "capital of France"})}}]}},
            {"role": "tool", "content": "Paris is the capital of France.", "metadata": {
                "crewai": "tool_result", **common, "tool_call_id": "call_search_1", "name": "search"}},
            {"role": "assistant", "content": "The capital is Paris.",
             "metadata": {"crewai": "task_output", **common}},
        ],
    )  # fmt: skip
    store.update_conversation(
        conversation_id=cid,
        user_id=user_id,
        metadata={"crewai": {"crew": "research", "run_id": "run-1", "status": "completed"}},
    )


def core_chat(store: ConversationStore, cid: str, user_id: str, text: str = "Hello") -> None:
    """A conversation written through the core alone."""
    store.append_messages(
        conversation_id=cid,
        user_id=user_id,
        messages=[
            {"role": "user", "content": text},
            {"role": "assistant", "content": f"You said: {text}"},
        ],
    )


def langgraph_thread(
    store: ConversationStore, thread_id: str, user_id: str, *, waiting_at: str | None = None
) -> None:
    """A LangGraph thread's conversation as ``convostore_langgraph``'s projection writes it
    (its ``_projection.py``): on the component's store, marked ``managedBy`` with the thread's
    id, the LangChain messages as core messages (an AI tool call in Chat Completions shape,
    the tool's answer with its ``tool_call_id``), the LangChain ids as message ids; with
    ``waiting_at``, paused at that node's ``interrupt()`` (the ``interrupt`` mark)."""
    metadata: dict[str, object] = {"managedBy": {"threadId": thread_id}}
    if waiting_at is not None:
        metadata["interrupt"] = {"node": waiting_at, "value": '{"approve": ["refund"]}'}
    store.as_component("convostore-langgraph").sync_messages(
        conversation_id=thread_id,
        user_id=user_id,
        metadata=metadata,
        messages=[
            {"role": "user", "content": "Refund order 42", "message_id": "lc-h1"},
            {"role": "assistant", "content": "", "message_id": "lc-a1", "metadata": {
                "tool_calls": [{"id": "call_refund", "type": "function", "function": {
                    "name": "refund", "arguments": json.dumps({"order": 42})}}]}},
            {"role": "tool", "content": "refunded", "message_id": "lc-t1",
             "metadata": {"tool_call_id": "call_refund", "name": "refund"}},
            {"role": "assistant", "content": "Order 42 is refunded.", "message_id": "lc-a2"},
        ],
    )  # fmt: skip
