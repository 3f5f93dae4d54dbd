"""The ``convostore`` command with OpenAI Agents sessions: after ``migrate`` the session's
model sees the history on the destination; ``import-from openai-sqlite`` brings in an Agents
SDK ``SQLiteSession`` database, item for item."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Runner, SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from convostore import ConversationStore
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
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="alpha", role="user", content="diverged")
    conflict = run("import-from", "openai-sqlite", str(path), "--url", shared_url, code=5)
    assert "already holds other items" in conflict.stderr


async def test_import_from_bad_files(tmp_path: Path) -> None:
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    missing = run("import-from", "openai-sqlite", str(tmp_path / "no.db"), "--url", dst, code=3)
    assert "there is no file" in missing.stderr
    with ConversationStore(f"sqlite:///{tmp_path / 'other.db'}"):
        pass
    foreign = run("import-from", "openai-sqlite", str(tmp_path / "other.db"), "--url", dst, code=3)
    assert "not an OpenAI Agents SQLiteSession database" in foreign.stderr
