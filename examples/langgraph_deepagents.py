"""A DeepAgent whose checkpoints and long-term memory live in convostore. Offline: the model is
scripted (it calls the agent's real file tools), so no API key and no network are needed.

Files under ``/memories/`` go to the LangGraph store (shared by every thread of the user), all
other files stay in the thread's checkpointed state.

    python examples/langgraph_deepagents.py                       # both turns, one process
    python examples/langgraph_deepagents.py --url sqlite:///d.db --thread a "remember: dark mode"
    python examples/langgraph_deepagents.py --url sqlite:///d.db --thread b "recall"
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver, ConvostoreStore
from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

USER = "user-42"


class ScriptedToolModel(BaseChatModel):
    """A rule-based chat model that calls the agent's file tools like a real model would.

    "remember: X" writes X to /memories/prefs.md (long-term) and a note to /scratch.md (this
    thread only); "recall" reads /memories/prefs.md; after tool results it answers with them.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        turn = sum(isinstance(m, HumanMessage) for m in messages)
        if isinstance(last, ToolMessage):
            results = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                results.append(str(m.content))
            reply = AIMessage("tool results: " + " | ".join(reversed(results)))
        elif str(last.content).startswith("remember:"):
            fact = str(last.content).removeprefix("remember:").strip()
            reply = AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "write_file",
                        "args": {"file_path": "/memories/prefs.md", "content": fact},
                        "id": f"call-{turn}-1",
                    },
                    {
                        "name": "write_file",
                        "args": {"file_path": "/scratch.md", "content": f"noted: {fact}"},
                        "id": f"call-{turn}-2",
                    },
                ],
            )
        elif str(last.content).startswith("recall"):
            reply = AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"file_path": "/memories/prefs.md"},
                        "id": f"call-{turn}-1",
                    }
                ],
            )
        else:
            reply = AIMessage(f"you said: {last.content}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def make_agent(db: ConversationStore) -> Any:
    """A DeepAgent on ``db``: checkpoints through ConvostoreSaver, /memories/ in ConvostoreStore."""
    backend = CompositeBackend(
        default=StateBackend(),
        routes={"/memories/": StoreBackend(namespace=lambda rt: ("memories", USER))},
    )
    return create_deep_agent(
        model=ScriptedToolModel(),
        checkpointer=ConvostoreSaver(db),
        store=ConvostoreStore(db),
        backend=backend,
    )


def ask(url: str, thread: str, text: str) -> str:
    """One user turn on ``thread``; returns the agent's final answer."""
    with ConversationStore(url) as db:
        agent = make_agent(db)
        result = agent.invoke(
            {"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}}
        )
        return str(result["messages"][-1].content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--thread", default="a")
    parser.add_argument("text", nargs="?")
    args = parser.parse_args()
    if args.text is not None:
        print(ask(args.url or "sqlite:///deepagents.db", args.thread, args.text))
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'deepagents.db'}"
        print("thread a:", ask(url, "a", "remember: the user prefers dark mode"))
        print("thread b:", ask(url, "b", "recall"))


if __name__ == "__main__":
    main()
