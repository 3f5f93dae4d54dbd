"""Reading a ``~/.claude/projects`` folder as ``import-from claude-code`` does: the files the
Claude Agent SDK's ``import_session_to_store`` replays (``<project>/<session>.jsonl``, its
``<session>/subagents/**/*.jsonl`` and their ``.meta.json`` sidecars), found without following
a link out of the folder, each read whole and strictly (a bad line is an error naming it)
before anything of it is written."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SESSION_FILE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl", re.IGNORECASE
)
"""A transcript's name: its session id (a UUID, as the SDK requires) and ``.jsonl``."""


class BadLine(Exception):
    """A line of a transcript that is not a JSON object: ``line`` (from 1) and why."""

    def __init__(self, line: int, cause: str) -> None:
        super().__init__(f"line {line}: {cause}")
        self.line = line


@dataclass
class Transcript:
    """One file to import: its key (``subpath`` None for a main transcript) and its path."""

    path: Path
    project_key: str
    session_id: str
    subpath: str | None = None

    @property
    def key(self) -> dict[str, str]:
        key = {"project_key": self.project_key, "session_id": self.session_id}
        if self.subpath is not None:
            key["subpath"] = self.subpath
        return key


@dataclass
class Found:
    """What a walk of the projects folder found, and what it left out (relative paths)."""

    transcripts: list[Transcript] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # links leading out of the folder
    unnamed: list[str] = field(default_factory=list)  # .jsonl files not named by a session id


class _Walk:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.found = Found()
        self.seen: set[Path] = set()

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def entries(self, folder: Path) -> list[Path]:
        """``folder``'s entries that stay inside the root, by name; a link that leads out
        is recorded and left; a folder already walked (through a link) is not walked again."""
        real = folder.resolve()
        if real in self.seen:
            return []
        self.seen.add(real)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        kept = []
        for name in names:
            path = folder / name
            if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                self.found.outside.append(self.rel(path))
                continue
            kept.append(path)
        return kept

    def subagents(self, session_dir: Path, folder: Path, t: Transcript) -> None:
        for path in self.entries(folder):
            if path.is_dir():
                self.subagents(session_dir, path, t)
            elif path.is_file() and path.name.endswith(".jsonl"):
                subpath = path.relative_to(session_dir).as_posix()[: -len(".jsonl")]
                self.found.transcripts.append(
                    Transcript(path, t.project_key, t.session_id, subpath)
                )


def find(projects: Path) -> Found:
    """Every transcript under ``projects``, in a stable order (by project, then session)."""
    walk = _Walk(projects)
    for project in walk.entries(walk.root):
        if not project.is_dir():
            continue
        inside = walk.entries(project)
        folders = {p.name: p for p in inside if p.is_dir()}
        for path in inside:
            if not (path.name.endswith(".jsonl") and path.is_file()):
                continue
            if not _SESSION_FILE.fullmatch(path.name):
                walk.found.unnamed.append(walk.rel(path))
                continue
            main = Transcript(path, project.name, path.name[: -len(".jsonl")])
            walk.found.transcripts.append(main)
            session_dir = folders.get(main.session_id)
            if session_dir is None:
                continue
            for sub in walk.entries(session_dir):
                if sub.name == "subagents" and sub.is_dir():
                    walk.subagents(session_dir, sub, main)
    return walk.found


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 ({exc})") from None
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None


def read(path: Path) -> tuple[list[dict[str, Any]], list[int], bool]:
    """The entries of a transcript, the line number of each, and whether its last line was
    cut off (no newline, not JSON: what a crash while writing leaves), which is left out.
    Blank lines are skipped, as the SDK does; any other line that is not a JSON object
    raises ``BadLine``."""
    entries: list[dict[str, Any]] = []
    lines: list[int] = []
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                value = _parse(raw)
            except ValueError as exc:
                if not raw.endswith(b"\n"):
                    return entries, lines, True
                raise BadLine(number, str(exc)) from None
            if not isinstance(value, dict):
                raise BadLine(number, f"a JSON {type(value).__name__}, not an entry (an object)")
            entries.append(value)
            lines.append(number)
    return entries, lines, False


def sidecar(transcript: Path, root: Path) -> dict[str, Any] | None:
    """A subagent transcript's ``.meta.json``, as the SDK reads it: absent, unreadable, not
    JSON or not an object reads as None (and so does one behind a link out of ``root``)."""
    path = transcript.with_name(transcript.name[: -len(".jsonl")] + ".meta.json")
    try:
        if not path.resolve().is_relative_to(root.resolve()):
            return None
        meta = _parse(path.read_bytes())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None
