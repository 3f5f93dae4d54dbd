"""A Claude Code session as the CLI writes it to disk, for the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION_ID = "4ca98735-1111-4222-8333-444455556666"
AGENT_ID = "abc123"
SUBPATH = f"subagents/agent-{AGENT_ID}"


def _line(
    kind: str, uuid: str | None, parent: str | None, cwd: str, **extra: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": SESSION_ID,
        "version": "2.1.330",
        "gitBranch": "main",
        "type": kind,
        "timestamp": "2026-01-01T10:00:00.000Z",
        **extra,
    }
    if uuid is not None:
        entry["uuid"] = uuid
    return entry


def transcript(cwd: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """A Claude Code session as the CLI writes it: the main transcript (a tool call that runs a
    subagent), the subagent's transcript and its ``.meta.json`` sidecar."""
    u = [f"00000000-0000-4000-8000-00000000000{i}" for i in range(10)]
    main = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": SESSION_ID},
        _line("user", u[1], None, cwd, message={"role": "user", "content": "Summarize README.md"}),
        _line(
            "assistant",
            u[2],
            u[1],
            cwd,
            message={
                "id": "msg_01",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Task",
                        "input": {"prompt": "Read README.md"},
                    }
                ],
            },
        ),
        _line(
            "user",
            u[3],
            u[2],
            cwd,
            message={
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "It is a README."}
                ],
            },
        ),
        _line(
            "assistant",
            u[4],
            u[3],
            cwd,
            message={
                "id": "msg_02",
                "role": "assistant",
                "content": [{"type": "text", "text": "The README describes the project."}],
            },
        ),
        {"type": "ai-title", "aiTitle": "README summary", "sessionId": SESSION_ID},
    ]
    sub = [
        _line(
            "user",
            u[5],
            None,
            cwd,
            isSidechain=True,
            agentId=AGENT_ID,
            message={"role": "user", "content": "Read README.md"},
        ),
        _line(
            "assistant",
            u[6],
            u[5],
            cwd,
            isSidechain=True,
            agentId=AGENT_ID,
            message={
                "id": "msg_03",
                "role": "assistant",
                "content": [{"type": "text", "text": "It is a README."}],
            },
        ),
    ]
    meta = {"agentType": "general-purpose", "toolUseId": "toolu_01"}
    return main, sub, meta


def write_jsonl(path: Path, entries: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
