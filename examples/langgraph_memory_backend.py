"""A DeepAgent whose /memories/ files are a convostore memory store: every write and edit is a
version, kept with its history. Offline: the model is scripted (it calls the agent's real file
tools), so no API key and no network are needed.

    python examples/langgraph_memory_backend.py                        # a few turns, one process
    python examples/langgraph_memory_backend.py --url sqlite:///m.db "remember: dark mode"
    python examples/langgraph_memory_backend.py --url sqlite:///m.db "recall"   # another process
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convostore import ConversationStore
from convostore_langgraph import ConvostoreMemoryBackend
from deepagents import create_deep_agent
from deepagents.backends import CompositeBackend, StateBackend
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

USER = "user-42"
NOTES = "/memories/notes.md"
END = "<!-- end -->"


class ScriptedMemoryModel(BaseChatModel):
    """A rule-based chat model that keeps notes with the agent's file tools, as a real one would.

    "remember: X" edits /memories/notes.md to add "- X" (and writes the file when the edit says
    it does not exist yet); "forget: X" edits the line away; "recall" reads the file; "search: X"
    greps /memories/. After the tool results it answers with them.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted-memory-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedMemoryModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            if last.name == "edit_file" and "not found" in str(last.content):
                fact = ask.removeprefix("remember:").strip()
                content = f"# Notes\n- {fact}\n{END}\n"
                return self._call("write_file", {"file_path": NOTES, "content": content})
            return self._reply(AIMessage(f"tool result: {last.content}"))
        verb, _, arg = ask.partition(":")
        arg = arg.strip()
        if verb == "remember":
            return self._call(
                "edit_file",
                {"file_path": NOTES, "old_string": END, "new_string": f"- {arg}\n{END}"},
            )
        if verb == "forget":
            return self._call(
                "edit_file", {"file_path": NOTES, "old_string": f"- {arg}\n", "new_string": ""}
            )
        if verb == "recall":
            return self._call("read_file", {"file_path": NOTES})
        if verb == "search":
            return self._call("grep", {"pattern": arg, "path": "/memories/"})
        return self._reply(AIMessage(f"you said: {ask}"))

    def _call(self, name: str, args: dict[str, Any]) -> ChatResult:
        return self._reply(AIMessage("", tool_calls=[{"name": name, "args": args, "id": name}]))

    @staticmethod
    def _reply(message: AIMessage) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=message)])


def memory_store_id(db: ConversationStore, name: str = "agent-notes") -> str:
    """The id of USER's memory store called ``name``, created on first use."""
    for found in db.list_memory_stores(user_id=USER, limit=100).items:
        if found.name == name:
            return found.memory_store_id
    return db.create_memory_store(name, user_id=USER).memory_store_id


def make_agent(db: ConversationStore) -> Any:
    """A DeepAgent whose /memories/ route is USER's memory store; other files stay in the
    thread's state."""
    memories = ConvostoreMemoryBackend(db, memory_store_id(db), user_id=USER)
    backend = CompositeBackend(default=StateBackend(), routes={"/memories/": memories})
    return create_deep_agent(model=ScriptedMemoryModel(), backend=backend)


def ask(url: str, text: str) -> str:
    """One user turn; returns the agent's final answer."""
    with ConversationStore(url) as db:
        result = make_agent(db).invoke({"messages": [HumanMessage(text)]})
        return str(result["messages"][-1].content)


def history(url: str) -> list[str]:
    """Every version of /memories/notes.md, oldest first: operation, version, size."""
    with ConversationStore(url) as db:
        sid = memory_store_id(db)
        entry = db.get_memory_by_path(sid, "notes.md", user_id=USER)
        if entry is None:
            return []
        versions = db.list_memory_versions(sid, entry_id=entry.entry_id, limit=100).items
        return [f"{v.operation} v{v.version} ({v.size} bytes)" for v in versions]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("text", nargs="?")
    args = parser.parse_args()
    if args.text is not None:
        print(ask(args.url or "sqlite:///memories.db", args.text))
        return
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'memories.db'}"
        for text in ["remember: dark mode", "remember: large fonts", "forget: dark mode"]:
            print(f"{text!r}:", ask(url, text))
        print("'recall':", ask(url, "recall"))
        print("history:", ", ".join(history(url)))


if __name__ == "__main__":
    main()
