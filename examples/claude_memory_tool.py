"""Anthropic's memory tool on a convostore memory store: the anthropic SDK's tool runner runs
ConvostoreMemoryTool, and every file the model keeps under /memories is a versioned entry of the
store. Offline: the Messages API is scripted (an httpx2 MockTransport answers the SDK's real
requests like a model would), so no API key and no network are needed.

    python examples/claude_memory_tool.py                                # a few turns, one process
    python examples/claude_memory_tool.py --url sqlite:///m.db "remember: dark mode"
    python examples/claude_memory_tool.py --url sqlite:///m.db "recall"  # another process
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import httpx2
from anthropic import Anthropic
from convostore import ConversationStore
from convostore_claude import ConvostoreMemoryTool

USER = "user-42"
NOTES = "/memories/notes.md"
END = "<!-- end -->"


class ScriptedMessagesAPI:
    """Answers POST /v1/messages as a model using the memory tool would, from the task in the
    first user message and the tool results so far. It holds threads as the API does (a
    ``continue`` request sends only the new messages).

    "remember: X" views /memories, then str_replaces END in notes.md (or creates it);
    "recall" views notes.md; "tidy" inserts a heading line, renames notes.md into archive/
    and views /memories; "forget everything" deletes archive/; anything else is a
    ``view`` of that path. After the last step it answers with the last tool result.
    """

    def __init__(self) -> None:
        self.threads: dict[str, list[dict[str, Any]]] = {}
        self.ids = itertools.count(1)
        self.requests: list[dict[str, Any]] = []  # every request body, as sent

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        thread = body.get("thread") or {}
        history = self.threads.get(thread.get("previous_message_id", ""), []) + body["messages"]
        content = self.reply(history)
        message_id = f"msg_{next(self.ids)}"
        done = content[0]["type"] == "text"
        self.threads[message_id] = [*history, {"role": "assistant", "content": content}]
        return httpx2.Response(
            200,
            json={
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "end_turn" if done else "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    def reply(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        task = history[0]["content"]
        task = task if isinstance(task, str) else task[0]["text"]
        results = [
            block
            for message in history
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        plan = self.plan(task, results)
        if len(results) >= len(plan):
            last = results[-1]["content"] if results else ""
            text = last if isinstance(last, str) else " ".join(b["text"] for b in last)
            return [{"type": "text", "text": text}]
        return [
            {
                "type": "tool_use",
                "id": f"toolu_{len(results)}",
                "name": "memory",
                "input": plan[len(results)],
            }
        ]

    @staticmethod
    def plan(task: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The memory commands for ``task``; a step may depend on the results before it."""
        verb, _, arg = task.partition(":")
        fact = arg.strip()
        if verb == "remember":
            listing = str(results[0]["content"]) if results else ""
            if "notes.md" in listing:
                edit = {
                    "command": "str_replace",
                    "path": NOTES,
                    "old_str": END,
                    "new_str": f"- {fact}\n{END}",
                }
            else:
                edit = {
                    "command": "create",
                    "path": NOTES,
                    "file_text": f"# Notes\n- {fact}\n{END}\n",
                }
            return [{"command": "view", "path": "/memories"}, edit]
        if verb == "recall":
            return [{"command": "view", "path": NOTES}]
        if verb == "tidy":
            return [
                {
                    "command": "insert",
                    "path": NOTES,
                    "insert_line": 1,
                    "insert_text": "(kept by the assistant)",
                },
                {"command": "rename", "old_path": NOTES, "new_path": "/memories/archive/notes.md"},
                {"command": "view", "path": "/memories"},
            ]
        if verb == "forget everything":
            return [{"command": "delete", "path": "/memories/archive"}]
        return [{"command": "view", "path": task}]


def memory_store_id(db: ConversationStore, name: str = "claude-memory") -> str:
    """The id of USER's memory store called ``name``, created on first use."""
    for found in db.list_memory_stores(user_id=USER, limit=100).items:
        if found.name == name:
            return found.memory_store_id
    return db.create_memory_store(name, user_id=USER).memory_store_id


def scripted_client(api: ScriptedMessagesAPI) -> Anthropic:
    """An ``Anthropic`` client whose requests ``api`` answers (nothing leaves the process)."""
    return Anthropic(
        api_key="scripted",
        base_url="http://scripted.invalid",
        http_client=httpx2.Client(transport=httpx2.MockTransport(api)),
    )


def ask(url: str, text: str, api: ScriptedMessagesAPI | None = None) -> str:
    """One user turn through the SDK's tool runner; returns the model's final text."""
    client = scripted_client(api or ScriptedMessagesAPI())
    with ConversationStore(url) as db:
        memory = ConvostoreMemoryTool(db, memory_store_id(db), user_id=USER)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-5-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": text}],
            tools=[memory],
        )
        final = runner.until_done()
        return "".join(block.text for block in final.content if block.type == "text")


def history(url: str, path: str) -> list[str]:
    """Every version of the entry now at ``path`` (relative to /memories): what and where."""
    with ConversationStore(url) as db:
        sid = memory_store_id(db)
        entry = db.get_memory_by_path(sid, path, user_id=USER)
        if entry is None:
            return []
        versions = db.list_memory_versions(sid, entry_id=entry.entry_id, limit=100).items
        return [f"v{v.version} {v.operation} {v.path}" for v in versions]


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
        for text in ["remember: dark mode", "remember: large fonts", "recall", "tidy"]:
            print(f"--- {text}\n{ask(url, text)}")
        print("--- history:", "; ".join(history(url, "archive/notes.md")))


if __name__ == "__main__":
    main()
