"""Scripted graphs (no model, no network) shared by the tests, the examples and the benchmark."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]


def _last_text(state: ChatState) -> str:
    return str(state["messages"][-1].content) if state["messages"] else ""


def plan(state: ChatState) -> dict[str, Any]:
    n = len(state["messages"])
    return {"messages": [AIMessage(f"plan for: {_last_text(state)}", id=f"plan-{n}")]}


def act(state: ChatState) -> dict[str, Any]:
    n = len(state["messages"])
    asked = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    answer = "auto"
    if asked and "ask" in str(asked[-1].content):
        answer = str(interrupt({"question": f"approve step {n}?"}))
    return {"messages": [AIMessage(f"acted ({answer})", id=f"act-{n}")]}


def reflect(state: ChatState) -> dict[str, Any]:
    n = len(state["messages"])
    return {"messages": [AIMessage("reflected", id=f"reflect-{n}")], "turns": 1}


def three_node_graph() -> StateGraph[ChatState]:
    """plan -> act (interrupts when the user says "ask") -> reflect; one turn per invoke."""
    graph = StateGraph(ChatState)
    graph.add_node("plan", plan)
    graph.add_node("act", act)
    graph.add_node("reflect", reflect)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "reflect")
    graph.add_edge("reflect", END)
    return graph


def graph_with_subgraph() -> StateGraph[ChatState]:
    """A parent whose middle node is the three-node graph compiled as a subgraph."""
    inner = three_node_graph().compile()

    def before(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage("outer start", id=f"outer-{len(state['messages'])}")]}

    graph = StateGraph(ChatState)
    graph.add_node("before", before)
    graph.add_node("inner", inner)
    graph.add_edge(START, "before")
    graph.add_edge("before", "inner")
    graph.add_edge("inner", END)
    return graph


def user(text: str, n: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(text, id=f"user-{n}")], "turns": 0}


# -- a tool-calling agent: scripted model, real ToolNode, an approval interrupt ---------------


class ToolState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    title: NotRequired[str]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def delete_file(path: str) -> str:
    """Delete a file (needs a human's approval)."""
    return f"deleted {path}"


def scripted_agent(state: ToolState) -> dict[str, Any]:
    """A model's turn, scripted: "weather X" calls get_weather, "delete X" calls delete_file
    (and get_weather for the weather there), after tool results it answers with them; the
    first user message names the thread's title."""
    messages = state["messages"]
    last = messages[-1]
    n = len(messages)
    out: dict[str, Any] = {}
    if "title" not in state:
        first = next(m for m in messages if isinstance(m, HumanMessage))
        out["title"] = f"About {first.content}"
    if isinstance(last, ToolMessage):
        results = []
        for m in reversed(messages):
            if not isinstance(m, ToolMessage):
                break
            results.append(str(m.content))
        out["messages"] = [AIMessage("answer: " + "; ".join(reversed(results)), id=f"ai-{n}")]
        return out
    text = str(last.content)
    if text.startswith("weather "):
        calls = [{"name": "get_weather", "args": {"city": text[8:]}, "id": f"call-{n}-w"}]
        out["messages"] = [AIMessage("Let me check.", id=f"ai-{n}", tool_calls=calls)]
    elif text.startswith("delete "):
        calls = [
            {"name": "delete_file", "args": {"path": text[7:]}, "id": f"call-{n}-d"},
            {"name": "get_weather", "args": {"city": "Paris"}, "id": f"call-{n}-w"},
        ]
        out["messages"] = [AIMessage("", id=f"ai-{n}", tool_calls=calls)]
    else:
        out["messages"] = [AIMessage(f"echo: {text}", id=f"ai-{n}")]
    return out


def _route(state: ToolState) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        dangerous = any(c["name"] == "delete_file" for c in last.tool_calls)
        return "approve" if dangerous else "tools"
    return END


def approve(state: ToolState) -> dict[str, Any]:
    """Stops for a human before a dangerous call; "no" answers the calls as refused."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    answer = interrupt({"approve": [c["name"] for c in last.tool_calls]})
    if answer == "yes":
        return {}
    refused = [
        ToolMessage("refused by a human", tool_call_id=str(c["id"]), name=c["name"])
        for c in last.tool_calls
    ]
    return {"messages": refused}


def tool_graph() -> StateGraph[ToolState]:
    """agent -> (approve ->) tools -> agent, until the agent answers without calls."""
    graph = StateGraph(ToolState)
    graph.add_node("agent", scripted_agent)
    graph.add_node("approve", approve)
    graph.add_node("tools", ToolNode([get_weather, delete_file]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", _route, ["approve", "tools", END])
    graph.add_conditional_edges(
        "approve",
        lambda s: "agent" if isinstance(s["messages"][-1], ToolMessage) else "tools",
        ["agent", "tools"],
    )
    graph.add_edge("tools", "agent")
    return graph
