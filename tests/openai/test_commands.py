"""The ``convostore`` command with OpenAI Agents sessions: after ``migrate`` the session's
model sees the history on the destination; ``import-from openai-sqlite`` brings in an Agents
SDK ``SQLiteSession`` database, item for item."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agents import Runner, SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from convostore import ConversationStore
from convostore.commands.importers import importer
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, tool_turn

pytestmark = pytest.mark.anyio
CONVOSTORE = str(Path(sys.executable).parent / "convostore")


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONVOSTORE_URL"}
    done = subprocess.run(
        [CONVOSTORE, *args], capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert done.returncode == code, (done.stdout, done.stderr)
    return done


async def _second_turn_sees(session: Any, stored: list[Any]) -> None:
    """The model of the next turn is given exactly the stored history, then the new input."""
    model = ScriptedModel([[assistant_message("Still sunny.")]])
    result = await Runner.run(agent_for(model), "And tomorrow?", session=session)
    assert result.final_output == "Still sunny."
    assert model.calls[0].input == [*stored, {"role": "user", "content": "And tomorrow?"}]


@pytest.mark.parametrize("direction", ["sqlite-postgres", "postgres-sqlite"])
async def test_after_migrate_the_model_sees_the_history(
    direction: str, tmp_path: Path, pg_schema_url: str
) -> None:
    sqlite = f"sqlite:///{tmp_path / 'oa.db'}"
    src, dst = (
        (sqlite, pg_schema_url) if direction == "sqlite-postgres" else (pg_schema_url, sqlite)
    )
    async with ConvostoreSession("chat-1", url=src) as session:
        model = ScriptedModel(tool_turn(1, "Paris", "It is sunny."))
        await Runner.run(agent_for(model), "Weather in Paris?", session=session)
        stored = await session.get_items()
    assert len(stored) == 5
    run("migrate", src, dst)
    async with ConvostoreSession("chat-1", url=dst) as session:
        assert await session.get_items() == stored
        await _second_turn_sees(session, stored)


async def _agents_sqlite_file(path: Path) -> dict[str, list[Any]]:
    """Two sessions written by the Agents SDK's own SQLiteSession, through the Runner."""
    items: dict[str, list[Any]] = {}
    for sid, city in (("alpha", "Paris"), ("beta", "Oslo")):
        session = SQLiteSession(sid, str(path))
        model = ScriptedModel(tool_turn(1, city, f"{city}: sunny."))
        await Runner.run(agent_for(model), f"Weather in {city}?", session=session)
        items[sid] = await session.get_items()
        session.close()
    return items


async def test_import_from_an_agents_sqlite_session(tmp_path: Path, shared_url: str) -> None:
    path = tmp_path / "agents.db"
    theirs = await _agents_sqlite_file(path)
    done = run("import-from", "openai-sqlite", str(path), "--url", shared_url)
    assert "imported 2 OpenAI Agents sessions" in done.stdout and "imported 10 items" in done.stdout
    again = run("import-from", "openai-sqlite", str(path), "--url", shared_url)
    assert "imported 0 OpenAI Agents sessions" in again.stdout  # nothing twice
    for sid, items in theirs.items():
        async with ConvostoreSession(sid, url=shared_url) as session:
            assert await session.get_items() == items
            await _second_turn_sees(session, items)


async def test_import_from_openai_sqlite_carries_each_items_time(
    tmp_path: Path, shared_url: str
) -> None:
    """``SQLiteSession`` stores when each item was added (UTC text); the messages keep it."""
    path = tmp_path / "agents.db"
    await _agents_sqlite_file(path)
    times = ["2021-03-04 05:06:07", "2021-03-04 05:06:08.250", "2021-03-04T05:06:09+02:00"]
    with sqlite3.connect(path) as conn:
        ids = [
            r[0] for r in conn.execute("SELECT id FROM agent_messages WHERE session_id = 'alpha'")
        ]
        for rowid, at in zip(ids, times, strict=False):
            conn.execute("UPDATE agent_messages SET created_at = ? WHERE id = ?", [at, rowid])
    run("import-from", "openai-sqlite", str(path), "--url", shared_url)
    with ConversationStore(shared_url) as store:
        got = [m.created_at for m in store.get_history(conversation_id="alpha")]
    ms = 1614834367000  # 2021-03-04 05:06:07 UTC
    assert got[:3] == [ms, ms + 1250, ms + 2000 - 2 * 3600 * 1000]
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT created_at FROM agent_messages WHERE id = ?", [ids[3]])
        (rest,) = stored.fetchone()
    assert got[3] == int(datetime.fromisoformat(rest).replace(tzinfo=UTC).timestamp() * 1000)


async def test_import_from_openai_sqlite_resumes_and_never_writes_twice(
    tmp_path: Path, shared_url: str
) -> None:
    """Items the source gained since are added; items written here since are left; a
    conversation that differs from the source is a conflict (exit 5), naming the session."""
    path = tmp_path / "agents.db"
    theirs = await _agents_sqlite_file(path)
    run("import-from", "openai-sqlite", str(path), "--url", shared_url)
    session = SQLiteSession("alpha", str(path))
    await session.add_items([{"role": "user", "content": "one more"}])
    session.close()
    more = run("import-from", "openai-sqlite", str(path), "--url", shared_url).stdout
    assert "imported 1 OpenAI Agents sessions" in more and "imported 1 items" in more
    async with ConvostoreSession("alpha", url=shared_url) as ours:
        assert await ours.get_items() == [*theirs["alpha"], {"role": "user", "content": "one more"}]
        await ours.add_items([{"role": "user", "content": "written here"}])
    here = run("import-from", "openai-sqlite", str(path), "--url", shared_url).stdout
    assert "imported 0 OpenAI Agents sessions" in here
    with ConversationStore(shared_url) as store:
        store.pop_message(conversation_id="beta")
        store.append_message(conversation_id="beta", role="user", content="diverged")
    conflict = run("import-from", "openai-sqlite", str(path), "--url", shared_url, code=5)
    assert "session 'beta': conversation 'beta' already holds other items" in conflict.stderr


async def test_import_from_openai_sqlite_for_a_user(tmp_path: Path, shared_url: str) -> None:
    path = tmp_path / "agents.db"
    theirs = await _agents_sqlite_file(path)
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="beta", role="user", content="bob's", user_id="bob")
    refused = run(
        "import-from", "openai-sqlite", str(path), "--url", shared_url, "--user", "alice", code=5
    )
    assert "belongs to another user, not to user_id 'alice'" in refused.stderr
    assert "imported before it, whole: 1 OpenAI Agents sessions (5 items)" in refused.stderr
    with ConversationStore(shared_url) as store:
        alpha = store.get_conversation(conversation_id="alpha")
        assert alpha is not None and alpha.user_id == "alice"
        assert [m.content for m in store.get_history(conversation_id="beta")] == ["bob's"]
    async with ConvostoreSession("alpha", url=shared_url, user_id="alice") as session:
        assert await session.get_items() == theirs["alpha"]


async def test_import_from_bad_files(tmp_path: Path) -> None:
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    missing = run("import-from", "openai-sqlite", str(tmp_path / "no.db"), "--url", dst, code=3)
    assert "there is no file" in missing.stderr
    with ConversationStore(f"sqlite:///{tmp_path / 'other.db'}"):
        pass
    foreign = run("import-from", "openai-sqlite", str(tmp_path / "other.db"), "--url", dst, code=3)
    assert "not an OpenAI Agents SQLiteSession database" in foreign.stderr


async def test_import_from_openai_sqlite_reports_progress(tmp_path: Path) -> None:
    """The command's bar (on a terminal) is fed by the importer: one call per session."""
    path = tmp_path / "agents.db"
    await _agents_sqlite_file(path)
    calls: list[tuple[str, int, int]] = []
    with ConversationStore(f"sqlite:///{tmp_path / 'ours.db'}") as store:
        importer("openai-sqlite")(store, str(path), progress=lambda *c: calls.append(c))
    assert calls == [("OpenAI Agents sessions", 1, 2), ("OpenAI Agents sessions", 2, 2)]
