"""What this package registers for the ``convostore`` command: its component (no tables of
its own: sessions are conversations under the ``claude/`` prefix, counted by
``convostore stats``) and ``convostore import-from claude-code DIR``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from convostore import ConversationStore, ConvostoreError, MemoryValidationError
from convostore.spi import Component

from . import _transcripts
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


def import_claude_code(
    store: ConversationStore,
    source: str,
    *,
    user_id: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[tuple[str, int]]:
    """Replay every Claude Code transcript under a ``~/.claude/projects`` folder (each
    ``<project>/<session>.jsonl`` with its subagents and their sidecars) into this store's
    Claude session store, under the keys the Agent SDK's ``import_session_to_store`` and a
    live mirror use, so ``resume=session_id`` finds them.

    Each file is read whole first (``_transcripts``: links out of the folder are not
    followed; a line that is not a JSON object is an error naming the file and the line; a
    cut-off last line, what a crash leaves, is skipped and reported) and written in one
    append. Entries are keyed by their ``uuid``: importing again adds only what is new.
    ``user_id`` scopes and owns the sessions, as ``ConvostoreSessionStore(user_id=...)``."""
    projects = _projects_dir(source)
    sessions = ConvostoreSessionStore(store=store, user_id=user_id)
    found = _transcripts.find(projects)
    root = projects.resolve()
    report = {"sessions": 0, "entries": 0}
    cut: list[str] = []

    async def run() -> None:
        for n, t in enumerate(found.transcripts):
            new = await _import_one(sessions, t, root, cut)
            report["sessions"] += bool(new) and t.subpath is None
            report["entries"] += new
            if progress is not None:
                progress("Claude Code transcripts", n + 1, len(found.transcripts))

    try:
        anyio.run(run)
    except ConvostoreError as exc:
        if report["entries"]:
            exc.add_note(
                f"imported before it, whole: {report['sessions']:,} Claude Code sessions"
                f" ({report['entries']:,} transcript entries)"
            )
        raise
    result = [
        ("Claude Code sessions", report["sessions"]),
        ("transcript entries", report["entries"]),
    ]
    result += [(f"skipped cut-off last line (a crash leaves one) of {p!r}", 1) for p in cut]
    result += [(f"skipped link out of the projects folder {p!r}", 1) for p in found.outside]
    result += [(f"skipped file not named by a session id {p!r}", 1) for p in found.unnamed]
    return result


async def _import_one(
    sessions: ConvostoreSessionStore, t: _transcripts.Transcript, root: Path, cut: list[str]
) -> int:
    """Write what the store lacks of one transcript (and its sidecar) in one append; return
    how many entries."""
    name = repr(t.path.relative_to(root).as_posix())
    try:
        entries, lines, was_cut = _transcripts.read(t.path)
    except _transcripts.BadLine as exc:
        raise MemoryValidationError(f"transcript {name}, {exc}", argument="source") from None
    except OSError as exc:
        raise MemoryValidationError(
            f"transcript {name} cannot be read ({exc.strerror})", argument="source"
        ) from None
    if was_cut:
        cut.append(t.path.relative_to(root).as_posix())
    batch: list[Any] = list(entries)
    if t.subpath is not None:
        meta = _transcripts.sidecar(t.path, root)
        if meta is not None:  # after the SDK's own rule: its "type" last
            batch.append({**meta, "type": "agent_metadata"})
    if not batch:
        return 0
    cid = sessions.conversation_id(t.key)  # type: ignore[arg-type]
    before = await sessions._run(lambda: _count(sessions, cid))
    try:
        await sessions.append(t.key, batch)  # type: ignore[arg-type]
    except MemoryValidationError as exc:
        if exc.index is None:
            raise MemoryValidationError(f"transcript {name}: {exc}", argument="source") from None
        where = f"line {lines[exc.index]}" if exc.index < len(lines) else "its .meta.json"
        raise MemoryValidationError(
            f"transcript {name}, {where}{exc.detail}", argument="source"
        ) from None
    return await sessions._run(lambda: _count(sessions, cid)) - before


def _count(sessions: ConvostoreSessionStore, cid: str) -> int:
    meta = sessions.store.get_conversation(conversation_id=cid, user_id=sessions.user_id)
    return 0 if meta is None else meta.message_count
