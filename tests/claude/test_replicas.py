"""A session store opened from a URL with a real hot standby as its read replica."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_claude import ConvostoreSessionStore
from pg_cluster import Pair

pytestmark = pytest.mark.anyio

KEY: Any = {"project_key": "p", "session_id": "s"}


def entry(n: int) -> dict[str, Any]:
    return {"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"m{n}"}}


async def test_a_session_store_reads_the_standby_and_its_own_appends(
    pair: Pair, urls: tuple[str, str]
) -> None:
    primary, standby = urls
    app = f"t{uuid.uuid4().hex[:10]}"
    store = ConvostoreSessionStore(primary, replicas=[f"{standby}&application_name={app}"])
    try:
        await store.append(KEY, [entry(1)])
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        assert await store.load(KEY) == [entry(1)]
        assert any("convostore_" in s for s in pair.standby.statements(app)[before:])
        pair.pause_replay()
        await store.append(KEY, [entry(2)])
        assert await store.load(KEY) == [entry(1), entry(2)]
        assert [s["session_id"] for s in await store.list_sessions("p")] == ["s"]
    finally:
        pair.resume_replay()
        await store.aclose()


def test_replicas_go_with_a_url(urls: tuple[str, str]) -> None:
    primary, standby = urls
    with ConversationStore(primary) as base, pytest.raises(MemoryValidationError) as refused:
        ConvostoreSessionStore(store=base, replicas=[standby])
    assert refused.value.argument == "replicas"


def test_the_memory_tool_decides_its_writes_on_the_primary_with_replay_paused(
    pair: Pair, urls: tuple[str, str]
) -> None:
    """Another writer (a store without replicas: its writes are no position the tool's store
    knows, as another process's) changes three files while the standby's replay is paused
    (``max_replica_lag`` 30 s: the standby keeps the reads); the tool's edit, rename and
    delete read what they change on the primary, its view reads the standby."""
    from anthropic.lib.tools import ToolError
    from convostore_claude import ConvostoreMemoryTool

    primary, standby = urls
    writer = ConversationStore(primary)
    sid = writer.create_memory_store("notes", user_id="alice").memory_store_id
    for path, text in [("notes.md", "a\n"), ("plan.md", "draft\n"), ("gone.md", "old\n")]:
        writer.create_memory(sid, path, text, user_id="alice")
    store = ConversationStore(primary, replicas=[standby], max_replica_lag=30)
    pair.wait_caught_up()
    pair.pause_replay()
    try:
        entries = {e.path: e for e in writer.list_memories(sid, user_id="alice").items}
        for path, text in [("notes.md", "a\nb\n"), ("plan.md", "final\n")]:
            entry = entries[path]
            writer.update_memory(sid, entry.entry_id, text, entry.version, user_id="alice")
        writer.delete_memory(sid, entries["gone.md"].entry_id, user_id="alice")
        tool = ConvostoreMemoryTool(store, sid, user_id="alice")
        seen = str(tool.call({"command": "view", "path": "/memories/notes.md"}))
        assert "1\ta" in seen and "\tb" not in seen  # the standby's: without the other's "b"
        tool.call(
            {"command": "str_replace", "path": "/memories/notes.md", "old_str": "b", "new_str": "B"}
        )
        tool.call(
            {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/p.md"}
        )
        with pytest.raises(ToolError, match="does not exist"):
            tool.call({"command": "delete", "path": "/memories/gone.md"})
        current = {
            e.path: writer.get_memory(sid, e.entry_id, user_id="alice").content  # type: ignore[union-attr]
            for e in writer.list_memories(sid, user_id="alice").items
        }
        assert current == {"notes.md": "a\nB\n", "p.md": "final\n"}
    finally:
        pair.resume_replay()
        store.close()
        writer.close()
