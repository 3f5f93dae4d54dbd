"""Scripted graphs (no model, no network) shared by the tests, the examples and the benchmark."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
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
