"""The SDK end to end: ``query(options=ClaudeAgentOptions(session_store=...))`` with a scripted
CLI (tests/claude/fake_claude.py) mirrors into the store; a resume on a machine without the
local transcript materializes it from the store and continues under the same key."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    get_session_messages_from_store,
    list_sessions_from_store,
    list_subagents_from_store,
    project_key_for_directory,
    query,
)
from claude_agent_sdk.types import MirrorErrorMessage, TextBlock
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio
FAKE = Path(__file__).with_name("fake_claude.py")


@pytest.fixture
def cli(tmp_path: Path) -> str:
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    script.chmod(0o755)
    return str(script)


async def run(prompt: str, options: ClaudeAgentOptions, store: ConvostoreSessionStore) -> Any:
    """One turn; returns the result, the assistant's text and the store's entries at result."""
    texts, at_result = [], None
    async for message in query(prompt=prompt, options=options):
        assert not isinstance(message, MirrorErrorMessage), message
        if isinstance(message, AssistantMessage):
            texts += [b.text for b in message.content if isinstance(b, TextBlock)]
        if isinstance(message, ResultMessage):
            key: Any = {
                "project_key": project_key_for_directory(options.cwd),
                "session_id": message.session_id,
            }
            at_result = (message, await store.load(key))
    assert at_result is not None
    return at_result[0], texts, at_result[1]


@pytest.mark.parametrize("flush", ["batched", "eager"])
async def test_mirror_then_resume_from_the_store(
    conversation_store: ConversationStore,
    claude_home: Path,
    cli: str,
    tmp_path: Path,
    flush: Any,
) -> None:
    store = ConvostoreSessionStore(store=conversation_store, tenant="acme")
    cwd = str(claude_home)
    home = tmp_path / "claude-home"

    def options(**more: Any) -> ClaudeAgentOptions:
        return ClaudeAgentOptions(
            cli_path=cli,
            cwd=cwd,
            session_store=store,
            session_store_flush=flush,
            env={"CLAUDE_CONFIG_DIR": str(home), "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"},
            **more,
        )

    result, texts, stored = await run("hello", options(), store)
    sid = result.session_id
    assert texts == ["Prompt 1: hello"]
    # the store is up to date when the result is delivered: every line of the local transcript
    local = home / "projects" / project_key_for_directory(cwd) / f"{sid}.jsonl"
    assert stored == [json.loads(line) for line in local.read_text().splitlines()]

    # another machine: no local transcript, only the store
    shutil.rmtree(home / "projects")
    result, texts, stored = await run("again", options(resume=sid), store)
    assert result.session_id == sid
    assert texts == ["Prompt 2: again"]  # the scripted model saw the first prompt
    assert stored is not None
    prompts = [e["message"]["content"] for e in stored if e.get("type") == "user"]
    assert [p for p in prompts if isinstance(p, str)] == ["hello", "again"]

    [info] = await list_sessions_from_store(store, directory=cwd)
    assert (info.session_id, info.summary, info.first_prompt) == (sid, "About hello", "hello")
    assert await list_subagents_from_store(store, sid, directory=cwd) == ["a1"]
    messages = await get_session_messages_from_store(store, sid, directory=cwd)
    assert [m.type for m in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    # and the core sees one conversation titled from the summary, converting to Messages API
    cid = store.conversation_id({"project_key": project_key_for_directory(cwd), "session_id": sid})
    meta = conversation_store.get_conversation(conversation_id=cid)
    assert meta is not None and meta.metadata is not None
    assert meta.metadata["title"] == "About hello"
    turns = conversation_store.to_anthropic_messages(
        conversation_store.get_history(conversation_id=cid)
    )
    assert turns[0] == {"role": "user", "content": "hello"}
    assert turns[-2:] == [
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": [{"type": "text", "text": "Prompt 2: again"}]},
    ]
