"""Fixtures for the Claude SessionStore tests: every storage test runs on all three backends."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_transcript import SESSION_ID, SUBPATH, transcript, write_jsonl
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def conversation_store(backend_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(backend_url) as store:
        yield store


@pytest.fixture
def session_store(conversation_store: ConversationStore) -> ConvostoreSessionStore:
    return ConvostoreSessionStore(store=conversation_store)


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway ``CLAUDE_CONFIG_DIR`` (``~/.claude`` is never read) and a working directory."""
    home = tmp_path / "claude-home"
    home.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    cwd = tmp_path / "project"
    cwd.mkdir()
    return cwd


@pytest.fixture
def on_disk_session(claude_home: Path) -> dict[str, Any]:
    """The transcript written where the CLI writes it; returns its parts and paths."""
    from claude_agent_sdk import project_key_for_directory

    cwd = str(claude_home)
    main, sub, meta = transcript(cwd)
    project_key = project_key_for_directory(cwd)
    project_dir = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / project_key
    (project_dir / SESSION_ID / "subagents").mkdir(parents=True)
    write_jsonl(project_dir / f"{SESSION_ID}.jsonl", main)
    write_jsonl(project_dir / SESSION_ID / f"{SUBPATH}.jsonl", sub)
    (project_dir / SESSION_ID / f"{SUBPATH}.meta.json").write_text(json.dumps(meta))
    return {"cwd": cwd, "project_key": project_key, "main": main, "sub": sub, "meta": meta}
