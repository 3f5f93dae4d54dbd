"""An agent writing through the core (or an adapter) in a process of its own, beside a server.

agent.py append URL CONVERSATION_ID TEXT...   append assistant messages (no user: the agent path)
agent.py claude URL USER_ID                   one Claude session turn through the session store
agent.py read URL CONVERSATION_ID             print the conversation's contents as JSON
"""

from __future__ import annotations

import json
import sys

import anyio
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore


async def claude_turn(url: str, user_id: str) -> str:
    """What the Claude Agent SDK mirrors during one turn (entries as the CLI writes them)."""
    key = {"project_key": "demo-project", "session_id": "3bb1a2ad-session"}
    async with ConvostoreSessionStore(url, user_id=user_id) as store:
        await store.append(
            key,  # type: ignore[arg-type]
            [
                {"type": "user", "uuid": "u-1", "sessionId": key["session_id"],
                 "message": {"role": "user", "content": "Summarize README.md"}},
                {"type": "assistant", "uuid": "a-1", "sessionId": key["session_id"],
                 "message": {"role": "assistant",
                             "content": [{"type": "text", "text": "It explains how to install."}]}},
            ],
        )  # fmt: skip
        return store.conversation_id(key)  # type: ignore[arg-type]


def main() -> None:
    command, url, *rest = sys.argv[1:]
    if command == "claude":
        print(anyio.run(claude_turn, url, rest[0]))
        return
    with ConversationStore(url) as store:
        if command == "append":
            cid, *texts = rest
            for text in texts:
                print(store.append_message(conversation_id=cid, role="assistant", content=text))
        elif command == "read":
            print(json.dumps(store.get_contents(conversation_id=rest[0])))


if __name__ == "__main__":
    main()
