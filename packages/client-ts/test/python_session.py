"""The Python half of test/cross_runtime.test.mjs: a scripted session of the reference's calls
(camelCase, as the TypeScript client takes them, read from stdin) made through the Python
``ConversationStore`` on ``URL`` as user alice, printing what each call returned and what the
store then holds, as the server's JSON (camelCase; null fields of the models left out, as the
client leaves them out).

    python python_session.py URL < steps.json     run the steps, then dump
    python python_session.py URL --dump           only dump what the store holds
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from convostore import ConversationStore
from pydantic import BaseModel

USER = "alice"
METHODS = {
    "appendMessage": "append_message",
    "getMessages": "get_messages",
    "updateMessage": "update_message",
    "deleteMessage": "delete_message",
    "clearMessages": "clear_messages",
    "getConversation": "get_conversation",
    "listConversations": "list_conversations",
    "updateConversation": "update_conversation",
    "deleteConversation": "delete_conversation",
    "forkConversation": "fork_conversation",
}


def snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: f"_{m.group().lower()}", name)


def plain(value: Any) -> Any:
    """A returned value as JSON: models by their camelCase aliases without their null fields
    (only the models' own fields: content and metadata are kept as stored)."""
    if isinstance(value, BaseModel):
        out = {}
        for name, field in type(value).model_fields.items():
            item = getattr(value, name)
            if item is not None:
                key = field.alias or name
                out[key] = item if name in ("content", "metadata") else plain(item)
        return out
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def dump(store: ConversationStore) -> list[dict[str, Any]]:
    page = store.list_conversations(user_id=USER, limit=100, order="asc")
    return [
        {
            "conversation": plain(meta),
            "messages": plain(
                store.get_messages(conversation_id=meta.conversation_id, user_id=USER, limit=100)
            ),
        }
        for meta in page.items
    ]


def main() -> None:
    url = sys.argv[1]
    with ConversationStore(url) as store:
        results = []
        if sys.argv[2:] != ["--dump"]:
            for step in json.load(sys.stdin):
                method = getattr(store, METHODS[step["op"]])
                args = {snake(k): v for k, v in step["args"].items()}
                results.append(plain(method(**args, user_id=USER)))
        json.dump({"results": results, "stored": dump(store)}, sys.stdout)


if __name__ == "__main__":
    main()
