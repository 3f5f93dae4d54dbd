"""The ``convostore`` command with Claude sessions: ``import-from claude-code`` replays a
``~/.claude/projects`` folder into the session store (what the SDK reads from the store equals
what it reads from disk); ``migrate`` carries sessions over; ``stats`` counts them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import (
    get_session_messages,
    get_session_messages_from_store,
    get_subagent_messages,
    get_subagent_messages_from_store,
    list_sessions_from_store,
)
from claude_transcript import AGENT_ID, SESSION_ID, SUBPATH
from convostore import ConversationStore
from convostore.commands.importers import importer
from convostore_claude import ConvostoreSessionStore

CONVOSTORE = str(Path(sys.executable).parent / "convostore")


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONVOSTORE_URL", "CLAUDE_CONFIG_DIR")}
    done = subprocess.run(
        [CONVOSTORE, *args], capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert done.returncode == code, (done.stdout, done.stderr)
    return done


def _as_read(messages: list[Any]) -> list[Any]:
    return [(m.type, m.uuid, m.session_id, m.message, m.parent_tool_use_id) for m in messages]


def _read_back(url: str, s: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]]:
    async def read() -> tuple[list[Any], list[Any], list[Any]]:
        with ConversationStore(url) as store:
            sessions = ConvostoreSessionStore(store=store)
            key = {"project_key": s["project_key"], "session_id": SESSION_ID}
            entries = [
                await sessions.load(key),  # type: ignore[arg-type]
                await sessions.load({**key, "subpath": SUBPATH}),  # type: ignore[arg-type]
            ]
            main = await get_session_messages_from_store(sessions, SESSION_ID, directory=s["cwd"])
            sub = await get_subagent_messages_from_store(
                sessions, SESSION_ID, AGENT_ID, directory=s["cwd"]
            )
            infos = await list_sessions_from_store(sessions, directory=s["cwd"])
            return entries, [_as_read(main), _as_read(sub)], [i.session_id for i in infos]

    return anyio.run(read)


def test_import_from_claude_code_transcripts(
    on_disk_session: dict[str, Any], shared_url: str
) -> None:
    s = on_disk_session
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    done = run("import-from", "claude-code", str(projects), "--url", shared_url)
    assert "imported 1 Claude Code sessions" in done.stdout
    entries, read, listed = _read_back(shared_url, s)
    assert entries == [s["main"], [*s["sub"], {**s["meta"], "type": "agent_metadata"}]]
    # what the SDK reads from the store is what it reads from the files on disk
    on_disk = [
        _as_read(get_session_messages(SESSION_ID, directory=s["cwd"])),
        _as_read(get_subagent_messages(SESSION_ID, AGENT_ID, directory=s["cwd"])),
    ]
    assert read == on_disk and on_disk[0]
    assert listed == [SESSION_ID]
    # again, from the ~/.claude folder itself: nothing changes
    run("import-from", "claude-code", str(projects.parent), "--url", shared_url)
    assert _read_back(shared_url, s) == (entries, read, listed)
    stats = run("stats", "--url", shared_url).stdout
    row = next(line for line in stats.splitlines() if "Claude sessions " in line)
    assert row.split("│")[3].strip() == "2"  # the transcript and its subagent's


def test_migrate_carries_claude_sessions(
    on_disk_session: dict[str, Any], tmp_path: Path, pg_schema_url: str
) -> None:
    src = f"sqlite:///{tmp_path / 'claude.db'}"
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    run("import-from", "claude-code", str(projects), "--url", src)
    before = _read_back(src, on_disk_session)
    run("migrate", src, pg_schema_url)
    assert _read_back(pg_schema_url, on_disk_session) == before


def test_import_from_a_missing_folder(tmp_path: Path) -> None:
    dst = f"sqlite:///{tmp_path / 'ours.db'}"
    missing = run("import-from", "claude-code", str(tmp_path / "nope"), "--url", dst, code=3)
    assert "there is no directory" in missing.stderr


def test_import_from_claude_code_reports_progress(
    on_disk_session: dict[str, Any], tmp_path: Path
) -> None:
    """The command's bar (on a terminal) is fed by the importer: one call per transcript."""
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    calls: list[tuple[str, int, int]] = []
    with ConversationStore(f"sqlite:///{tmp_path / 'ours.db'}") as store:
        importer("claude-code")(store, str(projects), progress=lambda *c: calls.append(c))
    assert calls == [("Claude Code transcripts", 1, 2), ("Claude Code transcripts", 2, 2)]
