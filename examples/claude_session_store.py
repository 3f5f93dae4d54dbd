"""A Claude Agent SDK session store on convostore.

    .venvs/claude/bin/python examples/claude_session_store.py [sqlite:///claude.db]
    .venvs/claude/bin/python examples/claude_session_store.py --live "Summarize README.md"

By default it runs offline: the transcript lines the CLI mirrors during one turn are appended
directly, so it needs no CLI, no network and no API key. With ``--live`` it runs two real turns
through the SDK's ``query()`` (the ``claude`` CLI and an API key needed): each turn is mirrored
into the store, and the second resumes the first from the store, as any machine that opens the
same database can.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ResultMessage,
    get_session_messages_from_store,
    list_sessions_from_store,
    project_key_for_directory,
    query,
    rename_session_via_store,
)
from convostore import AsyncConversationStore
from convostore_claude import ConvostoreSessionStore


async def turn(
    session_store: ConvostoreSessionStore,
    project_dir: str,
    prompt: str,
    resume: str | None = None,
    **more: Any,
) -> str:
    """One turn of a real agent, mirrored into the store; returns the session id."""
    options = ClaudeAgentOptions(
        session_store=session_store, cwd=project_dir, resume=resume, **more
    )
    session_id = ""
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, ResultMessage):
            session_id = message.session_id
    return session_id


async def live(url: str, prompt: str, project_dir: str, **more: Any) -> None:
    """Two turns through the SDK: the second resumes the first from the store."""
    async with AsyncConversationStore(url) as store:  # "sqlite:///claude.db", "postgresql://..."
        session_store = store.claude_session_store(tenant="acme")
        session_id = await turn(session_store, project_dir, prompt, **more)
        # later, on any machine with the same database: the SDK loads the session from the store
        await turn(session_store, project_dir, "And in one sentence?", resume=session_id, **more)

        key: Any = {"project_key": project_key_for_directory(project_dir), "session_id": session_id}
        history = await store.get_history(conversation_id=session_store.conversation_id(key))
        for message in store.to_anthropic_messages(history):
            print(message["role"], message["content"])


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
    parser = argparse.ArgumentParser(description="A Claude Agent SDK session store on convostore.")
    parser.add_argument("url", nargs="?", help="default: a temporary SQLite file")
    parser.add_argument("--live", metavar="PROMPT", help="run two real turns (claude CLI, API key)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{tmp}/claude.db"
        if args.live:
            anyio.run(live, url, args.live, str(Path.cwd()))
        else:
            anyio.run(main, url)
