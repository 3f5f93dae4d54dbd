"""A scripted stand-in for the Claude Code CLI (stdlib only, offline): it speaks the SDK's
stream-json protocol, writes its transcript where the CLI does and, with --session-mirror,
emits the transcript_mirror frames the SDK hands to its SessionStore.

The scripted model answers each prompt with the number of user prompts it can see in the
transcript (so a resumed session proves its history was materialized) and runs one subagent
(a Task tool call with its own transcript and metadata) on the first turn.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def out(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def project_key(cwd: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", os.path.realpath(cwd))[:200]


class Session:
    def __init__(self, argv: list[str]) -> None:
        resume = next((a.split("=", 1)[1] for a in argv if a.startswith("--resume=")), None)
        self.session_id = resume or str(uuid.uuid4())
        self.mirror = "--session-mirror" in argv
        config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
        self.cwd = os.getcwd()
        self.dir = config / "projects" / project_key(self.cwd)
        self.path = self.dir / f"{self.session_id}.jsonl"
        self.entries: list[dict[str, Any]] = []
        if self.path.exists():
            self.entries = [json.loads(x) for x in self.path.read_text().splitlines() if x]
        self.last = next((e["uuid"] for e in reversed(self.entries) if "uuid" in e), None)

    def write(self, path: Path, entries: list[dict[str, Any]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(e) + "\n" for e in entries)
        if self.mirror:
            out({"type": "transcript_mirror", "filePath": str(path), "entries": entries})

    def line(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        entry = {
            "parentUuid": self.last,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.330",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": str(uuid.uuid4()),
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            **extra,
        }
        self.last = entry["uuid"]
        return entry

    def turn(self, prompt: str) -> str:
        prompts = 1 + sum(
            1
            for e in self.entries
            if e.get("type") == "user" and isinstance(e["message"]["content"], str)
        )
        first = not self.entries
        new: list[dict[str, Any]] = []
        if first:
            new.append(
                {
                    "type": "permission-mode",
                    "permissionMode": "default",
                    "sessionId": self.session_id,
                }
            )
        new.append(self.line("user", {"role": "user", "content": prompt}))
        self.write(self.path, new)
        self.entries += new
        if first:
            self.subagent(prompt)
        answer = f"Prompt {prompts}: {prompt}"
        reply = self.line(
            "assistant",
            {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "type": "message",
                "role": "assistant",
                "model": "scripted",
                "content": [{"type": "text", "text": answer}],
            },
        )
        tail = [reply, {"type": "last-prompt", "lastPrompt": prompt, "sessionId": self.session_id}]
        if first:
            tail.append(
                {"type": "ai-title", "aiTitle": f"About {prompt}", "sessionId": self.session_id}
            )
        self.write(self.path, tail)
        self.entries += tail
        out(
            {
                "type": "assistant",
                "message": reply["message"],
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": reply["uuid"],
            }
        )
        return answer

    def subagent(self, prompt: str) -> None:
        call = self.line(
            "assistant",
            {
                "id": "msg_task",
                "role": "assistant",
                "model": "scripted",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_task",
                        "name": "Task",
                        "input": {"prompt": prompt},
                    }
                ],
            },
        )
        self.write(self.path, [call])
        path = self.path.with_suffix("") / "subagents" / "agent-a1.jsonl"
        parent = self.last
        self.last = None
        sub = [
            self.line("user", {"role": "user", "content": prompt}, isSidechain=True, agentId="a1"),
            self.line(
                "assistant",
                {
                    "id": "msg_sub",
                    "role": "assistant",
                    "model": "scripted",
                    "content": [{"type": "text", "text": "looked"}],
                },
                isSidechain=True,
                agentId="a1",
            ),
        ]
        if self.mirror:
            meta = {"type": "agent_metadata", "agentType": "general-purpose"}
            out({"type": "transcript_mirror", "filePath": str(path), "entries": [meta]})
        self.write(path, sub)
        self.last = parent
        result = self.line(
            "user",
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_task", "content": "looked"}
                ],
            },
        )
        self.write(self.path, [result])
        self.entries += [call, result]


def main() -> None:
    session = Session(sys.argv[1:])
    for raw in sys.stdin:
        message = json.loads(raw)
        if message.get("type") == "control_request":
            request = message["request"]
            out(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message["request_id"],
                        "response": {"commands": [], "models": []}
                        if request["subtype"] == "initialize"
                        else {},
                    },
                }
            )
        elif message.get("type") == "user":
            out(
                {
                    "type": "system",
                    "subtype": "init",
                    "session_id": session.session_id,
                    "claude_code_version": "2.1.330",
                    "cwd": session.cwd,
                    "tools": [],
                    "model": "scripted",
                }
            )
            answer = session.turn(message["message"]["content"])
            out(
                {
                    "type": "result",
                    "subtype": "success",
                    "duration_ms": 1,
                    "duration_api_ms": 1,
                    "is_error": False,
                    "num_turns": 1,
                    "session_id": session.session_id,
                    "result": answer,
                }
            )


if __name__ == "__main__":
    main()
