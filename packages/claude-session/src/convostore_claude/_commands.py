"""What this package registers for the ``convostore`` command: its component (no tables of
its own: sessions are conversations under the ``claude/`` prefix, counted by
``convostore stats``) and ``convostore import-from claude-code DIR``."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from convostore import ConversationStore, MemoryValidationError
from convostore.spi import Component

from .store import ConvostoreSessionStore

COMPONENT = Component(
    name="claude",
    conversation_kinds={"Claude sessions": "claude/"},
    package="convostore-claude",
)


def _projects_dir(source: str) -> Path:
    """``~/.claude/projects`` as given, or found inside the ``~/.claude`` given."""
    path = Path(os.path.expanduser(source))
    if (path / "projects").is_dir():
        path = path / "projects"
    if not path.is_dir():
        raise MemoryValidationError(f"source {source!r}: there is no directory {str(path)!r}")
    return path


def import_claude_code(store: ConversationStore, source: str) -> list[tuple[str, int]]:
    """Replay every Claude Code transcript under a ``~/.claude/projects`` directory (each
    ``<project>/<session>.jsonl`` with its subagents and their sidecars) into this store's
    Claude session store, through the Agent SDK's own ``import_session_to_store``: the same
    keys a live mirror writes, so ``resume=session_id`` finds them. Entries are keyed by their
    ``uuid``: importing again adds nothing."""
    from claude_agent_sdk import import_session_to_store

    projects = _projects_dir(source)
    files = sorted(projects.glob("*/*.jsonl"))
    sessions = ConvostoreSessionStore(store=store)

    async def run() -> None:
        for file in files:
            await import_session_to_store(file.stem, sessions)

    # The SDK finds transcripts under $CLAUDE_CONFIG_DIR/projects.
    before = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = str(projects.parent)
    try:
        anyio.run(run)
    finally:
        if before is None:
            del os.environ["CLAUDE_CONFIG_DIR"]
        else:
            os.environ["CLAUDE_CONFIG_DIR"] = before
    return [("Claude Code sessions", len(files))]
