"""A Claude Agent SDK session store on convostore, offline.

    .venvs/claude/bin/python examples/claude_session_store.py [sqlite:///claude.db]

With a real model you pass the store to the SDK and every turn is mirrored into it:

    options = ClaudeAgentOptions(session_store=session_store, cwd=project_dir)
    async for message in query(prompt="Summarize README.md", options=options): ...

and ``ClaudeAgentOptions(session_store=session_store, resume=session_id)`` resumes it on any
machine that opens the same database. Here the transcript lines the CLI would mirror are
appended directly, so the script runs without a CLI, a network or an API key.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

import anyio
from claude_agent_sdk import (
    ClaudeAgentOptions,
    get_session_messages_from_store,
    list_sessions_from_store,
    project_key_for_directory,
    rename_session_via_store,
)
from convostore import AsyncConversationStore


async def main(url: str) -> None:
    project_dir = str(Path.cwd())
    async with AsyncConversationStore(url) as store:
        session_store = store.claude_session_store(tenant="acme")
        options = ClaudeAgentOptions(session_store=session_store, cwd=project_dir)
        assert options.session_store is session_store

        # What the SDK appends during one turn (batched: one call per transcript file).
        session_id = str(uuid.uuid4())
        key = {"project_key": project_key_for_directory(project_dir), "session_id": session_id}
        user, reply = str(uuid.uuid4()), str(uuid.uuid4())
        await session_store.append(
            key,
            [
                {"type": "permission-mode", "permissionMode": "default", "sessionId": session_id},
                {
                    "type": "user",
                    "uuid": user,
                    "parentUuid": None,
                    "sessionId": session_id,
                    "timestamp": "2026-01-01T10:00:00.000Z",
                    "message": {"role": "user", "content": "Summarize README.md"},
                },
                {
                    "type": "assistant",
                    "uuid": reply,
                    "parentUuid": user,
                    "sessionId": session_id,
                    "timestamp": "2026-01-01T10:00:02.000Z",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "It explains how to install."}],
                    },
                },
            ],
        )
        await rename_session_via_store(session_store, session_id, "README", directory=project_dir)

        # The SDK's own readers work on the store...
        for info in await list_sessions_from_store(session_store, directory=project_dir):
            print("session", info.session_id, "title:", info.summary)
        for message in await get_session_messages_from_store(
            session_store, session_id, directory=project_dir
        ):
            print(" ", message.type, message.message["content"])

        # ...and the session is a conversation of the store, like any other.
        cid = session_store.conversation_id(key)
        meta = await store.get_conversation(conversation_id=cid)
        assert meta is not None and meta.metadata is not None
        print("conversation", cid, "title:", meta.metadata["title"])
        history = await store.get_history(conversation_id=cid)
        print("anthropic messages:", store.to_anthropic_messages(history))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{tmp}/claude.db")
