"""The SDK's own store helpers on a real on-disk transcript imported into the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    delete_session_via_store,
    fork_session_via_store,
    get_session_messages_from_store,
    get_subagent_messages_from_store,
    import_session_to_store,
    list_sessions_from_store,
    list_subagents_from_store,
    rename_session_via_store,
    tag_session_via_store,
)
from claude_agent_sdk._internal.session_resume import materialize_resume_session
from claude_transcript import AGENT_ID, SESSION_ID, SUBPATH
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio


async def test_import_list_read_and_reimport(
    session_store: ConvostoreSessionStore, on_disk_session: dict[str, Any]
) -> None:
    s, cwd = on_disk_session, on_disk_session["cwd"]
    key = {"project_key": s["project_key"], "session_id": SESSION_ID}
    await import_session_to_store(SESSION_ID, session_store, directory=cwd)
    main = await session_store.load(key)  # type: ignore[arg-type]
    sub = await session_store.load({**key, "subpath": SUBPATH})  # type: ignore[arg-type]
    assert main == s["main"]
    assert sub == [*s["sub"], {**s["meta"], "type": "agent_metadata"}]
    summaries = await session_store.list_session_summaries(s["project_key"])

    # importing the same transcript again changes nothing: entries, summary, mtime
    await import_session_to_store(SESSION_ID, session_store, directory=cwd)
    assert await session_store.load(key) == main  # type: ignore[arg-type]
    assert await session_store.load({**key, "subpath": SUBPATH}) == sub  # type: ignore[arg-type]
    assert await session_store.list_session_summaries(s["project_key"]) == summaries

    [info] = await list_sessions_from_store(session_store, directory=cwd)
    assert info.session_id == SESSION_ID
    assert info.summary == "README summary"
    assert info.first_prompt == "Summarize README.md"
    assert info.git_branch == "main"
    assert info.last_modified == summaries[0]["mtime"]

    messages = await get_session_messages_from_store(session_store, SESSION_ID, directory=cwd)
    assert [(m.type, m.uuid) for m in messages] == [(e["type"], e["uuid"]) for e in s["main"][1:5]]
    assert await list_subagents_from_store(session_store, SESSION_ID, directory=cwd) == [AGENT_ID]
    sub_messages = await get_subagent_messages_from_store(
        session_store, SESSION_ID, AGENT_ID, directory=cwd
    )
    assert [m.uuid for m in sub_messages] == [e["uuid"] for e in s["sub"]]
    assert {m.parent_tool_use_id for m in sub_messages} == {"toolu_01"}


async def test_rename_tag_fork_delete(
    session_store: ConvostoreSessionStore, on_disk_session: dict[str, Any]
) -> None:
    cwd, project_key = on_disk_session["cwd"], on_disk_session["project_key"]
    await import_session_to_store(SESSION_ID, session_store, directory=cwd)

    await rename_session_via_store(session_store, SESSION_ID, "  My session ", directory=cwd)
    await tag_session_via_store(session_store, SESSION_ID, "important", directory=cwd)
    [info] = await list_sessions_from_store(session_store, directory=cwd)
    assert (info.summary, info.custom_title, info.tag) == ("My session", "My session", "important")
    await tag_session_via_store(session_store, SESSION_ID, None, directory=cwd)
    [info] = await list_sessions_from_store(session_store, directory=cwd)
    assert info.tag is None

    fork = await fork_session_via_store(session_store, SESSION_ID, directory=cwd)
    infos = {i.session_id: i for i in await list_sessions_from_store(session_store, directory=cwd)}
    assert set(infos) == {SESSION_ID, fork.session_id}
    assert infos[fork.session_id].summary == "My session (fork)"
    forked = await get_session_messages_from_store(session_store, fork.session_id, directory=cwd)
    assert [m.type for m in forked] == ["user", "assistant", "user", "assistant"]

    await delete_session_via_store(session_store, SESSION_ID, directory=cwd)
    key = {"project_key": project_key, "session_id": SESSION_ID}
    assert await session_store.load(key) is None  # type: ignore[arg-type]
    assert await session_store.load({**key, "subpath": SUBPATH}) is None  # type: ignore[arg-type]
    assert await session_store.list_subkeys(key) == []  # type: ignore[arg-type]
    assert [i.session_id for i in await list_sessions_from_store(session_store, directory=cwd)] == [
        fork.session_id
    ]


def _jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("how", ["resume", "continue"])
async def test_resume_materializes_the_session_from_the_store(
    session_store: ConvostoreSessionStore, on_disk_session: dict[str, Any], how: str
) -> None:
    s = on_disk_session
    await import_session_to_store(SESSION_ID, session_store, directory=s["cwd"])
    options = ClaudeAgentOptions(
        session_store=session_store,
        cwd=s["cwd"],
        resume=SESSION_ID if how == "resume" else None,
        continue_conversation=how == "continue",
    )
    materialized = await materialize_resume_session(options)
    assert materialized is not None
    try:
        assert materialized.resume_session_id == SESSION_ID
        root = materialized.config_dir / "projects" / s["project_key"]
        assert _jsonl(root / f"{SESSION_ID}.jsonl") == s["main"]
        assert _jsonl(root / SESSION_ID / f"{SUBPATH}.jsonl") == s["sub"]
        meta = json.loads((root / SESSION_ID / f"{SUBPATH}.meta.json").read_text())
        assert meta == s["meta"]
    finally:
        await materialized.cleanup()


async def test_session_is_a_conversation(
    conversation_store: ConversationStore,
    session_store: ConvostoreSessionStore,
    on_disk_session: dict[str, Any],
) -> None:
    s = on_disk_session
    await import_session_to_store(SESSION_ID, session_store, directory=s["cwd"])
    key: Any = {"project_key": s["project_key"], "session_id": SESSION_ID}
    cid = session_store.conversation_id(key)
    listed = {m.conversation_id: m for m in conversation_store.list_conversations(limit=10).items}
    assert listed[cid].metadata is not None
    assert listed[cid].metadata["title"] == "README summary"
    assert listed[cid].metadata["claude_session"] == key
    history = conversation_store.get_history(conversation_id=cid)
    assert [m.role for m in history] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "system",
    ]
    assert conversation_store.to_anthropic_messages(history) == [
        {"role": "user", "content": "Summarize README.md"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Task",
                    "input": {"prompt": "Read README.md"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "It is a README."}
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "The README describes the project."}],
        },
    ]
