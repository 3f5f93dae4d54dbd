"""The writer x reader matrix (tests/matrix/readers.py) for the Claude Agent SDK as the
writer: ``query()`` with the store as its ``session_store`` (the scripted CLI of
tests/claude/fake_claude.py: a prompt, a Task tool call and its result, an answer, the AI
title), then ``rename_session_via_store`` (a custom title); every reader on SQLite and
PostgreSQL. The expected messages are the transcript the CLI wrote on disk plus what the SDK
appended for the rename."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ResultMessage,
    SessionKey,
    SessionStoreEntry,
    fork_session_via_store,
    project_key_for_directory,
    query,
    rename_session_via_store,
)
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix"))
from readers import READERS, Written, check

FAKE = Path(__file__).with_name("fake_claude.py")


class Recording(ConvostoreSessionStore):
    """The store, noting every batch the SDK appends to the main transcript."""

    appended: list[dict[str, Any]]

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not key.get("subpath"):
            self.appended += [dict(e) for e in entries]
        await super().append(key, entries)


def role(entry: dict[str, Any]) -> str:
    return entry["type"] if entry.get("type") in ("user", "assistant") else "system"


def written(db: ConversationStore, tmp_path: Path) -> Written:
    cli = tmp_path / "claude"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    cli.chmod(0o755)
    home, cwd = tmp_path / "claude-home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    store = Recording(store=db, user_id="alice")
    store.appended = []
    options = ClaudeAgentOptions(
        cli_path=str(cli),
        cwd=str(cwd),
        session_store=store,
        env={"CLAUDE_CONFIG_DIR": str(home), "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"},
    )

    async def run() -> str:
        sid = None
        async for message in query(prompt="hello", options=options):
            if isinstance(message, ResultMessage):
                sid = message.session_id
        assert sid is not None
        await rename_session_via_store(store, sid, "Kyoto trip", directory=str(cwd))
        return sid

    sid = asyncio.run(run())
    key: SessionKey = {"project_key": project_key_for_directory(str(cwd)), "session_id": sid}
    local = home / "projects" / key["project_key"] / f"{sid}.jsonl"
    entries = [json.loads(line) for line in local.read_text().splitlines()]
    renamed = store.appended[len(entries) :]
    assert store.appended[: len(entries)] == entries  # the mirror wrote the transcript
    assert [e["type"] for e in renamed] == ["custom-title"]
    entries += renamed
    call = {
        "id": "toolu_task",
        "type": "function",
        "function": {"name": "Task", "arguments": '{"prompt": "hello"}'},
    }

    def gone() -> None:
        assert asyncio.run(store.load(key)) is None

    return Written(
        conversation_id=store.conversation_id(key),
        user_id="alice",
        title="Kyoto trip",
        metadata_keys={"claude_session", "claude_summary"},
        gone=gone,
        ids=[e.get("uuid") for e in entries],
        messages=[(role(e), e, None) for e in entries],
        anthropic=[
            {"role": "user", "content": "hello"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_task",
                        "name": "Task",
                        "input": {"prompt": "hello"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_task", "content": "looked"}
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Prompt 1: hello"}]},
        ],
        openai=[
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "toolu_task", "content": "looked"},
            {"role": "assistant", "content": [{"type": "text", "text": "Prompt 1: hello"}]},
        ],
    )


@pytest.fixture
def db(shared_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="other", role="user", content="x", user_id="bob")
        yield store


@pytest.mark.parametrize("reader", READERS)
def test_claude_query_writer(db: ConversationStore, tmp_path: Path, reader: str) -> None:
    what = written(db, tmp_path)
    db.append_message(conversation_id="newest", role="user", content="y")
    check(db, what, reader)


def test_a_claude_fork_is_the_sdks(db: ConversationStore, tmp_path: Path) -> None:
    """fork_session_via_store on this store: a new session with new uuids (not the core's
    copy), titled from the source, its own conversation."""
    what = written(db, tmp_path)
    store = ConvostoreSessionStore(store=db, user_id="alice")
    source = db.get_history(conversation_id=what.conversation_id)
    sid = source[0].content["sessionId"]
    cwd = str(tmp_path / "project")
    fork = asyncio.run(fork_session_via_store(store, sid, directory=cwd))
    key: SessionKey = {"project_key": project_key_for_directory(cwd), "session_id": fork.session_id}
    forked = db.get_history(conversation_id=store.conversation_id(key))
    uuids = {m.message_id for m in source}
    assert forked and not uuids & {m.message_id for m in forked}
    assert {m.content.get("sessionId") for m in forked} == {fork.session_id}
    meta = db.get_conversation(conversation_id=store.conversation_id(key))
    assert meta is not None and meta.metadata is not None
    assert meta.metadata["title"] == "Kyoto trip (fork)"
    assert db.to_anthropic_messages(forked) == what.anthropic
