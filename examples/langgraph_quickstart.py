"""LangGraph on convostore: a checkpointer and a store, three ways to get them, a graph that
interrupts and resumes, and long-term memory with a TTL. Offline (no model).

    python examples/langgraph_quickstart.py
"""

from __future__ import annotations

import operator
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    approvals: Annotated[int, operator.add]


def ask_approval(state: State) -> dict[str, Any]:
    answer = interrupt({"question": f"approve '{state['messages'][-1].content}'?"})
    return {"messages": [AIMessage(f"approved: {answer}")], "approvals": 1}


def build() -> StateGraph[State]:
    graph = StateGraph(State)
    graph.add_node("ask_approval", ask_approval)
    graph.add_edge(START, "ask_approval")
    graph.add_edge("ask_approval", END)
    return graph


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'app.db'}"

        # 1. from a core store: one database for conversations, checkpoints and memories
        with ConversationStore(url) as db:
            graph = build().compile(checkpointer=db.langgraph_checkpointer)
            cfg: Any = {"configurable": {"thread_id": "order-7"}}
            graph.invoke({"messages": [HumanMessage("ship order 7")], "approvals": 0}, cfg)
            assert graph.get_state(cfg).next == ("ask_approval",)  # waiting for a human

        # 2. from a URL (another process could do this): resume where it stopped
        with ConvostoreSaver(url) as saver:
            graph = build().compile(checkpointer=saver)
            out = graph.invoke(Command(resume="yes"), cfg)
            assert out["messages"][-1].content == "approved: yes"
            assert len(list(graph.get_state_history(cfg))) == 3

        # 3. a store for long-term memory, with a TTL in minutes (refreshed when read)
        with ConvostoreStore(url, ttl={"default_ttl": 60 * 24 * 30}) as store:
            store.put(("users", "u1", "prefs"), "theme", {"value": "dark", "score": 10})
            store.put(("users", "u1", "prefs"), "font", {"value": "large", "score": 2})
            hits = store.search(("users", "u1"), filter={"score": {"$gt": 5}})
            assert [h.key for h in hits] == ["theme"]
            assert store.list_namespaces(prefix=("users",)) == [("users", "u1", "prefs")]
        print("ok:", out["messages"][-1].content, "/", hits[0].value)


if __name__ == "__main__":
    main()
