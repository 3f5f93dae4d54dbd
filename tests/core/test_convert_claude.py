"""Claude Code transcript entries (one JSONL line each) convert like any other content."""

from __future__ import annotations

from typing import Any

from convostore import convert

SID = "4ca98735-0000-4000-8000-000000000000"


def entry(
    kind: str, uuid: str, message: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    e: dict[str, Any] = {"type": kind, "uuid": uuid, "sessionId": SID, "parentUuid": None, **extra}
    if message is not None:
        e["message"] = message
    return e


TRANSCRIPT = [
    {"type": "permission-mode", "permissionMode": "default", "sessionId": SID},
    entry("user", "u1", {"role": "user", "content": "Summarize README.md"}),
    entry(
        "assistant",
        "a1",
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
        },
    ),
    entry(
        "assistant",
        "a2",
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Read",
                    "input": {"path": "README.md"},
                }
            ],
        },
    ),
    entry("progress", "p1", data={"type": "hook_progress"}),
    entry(
        "user",
        "u2",
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "# Title"}],
        },
        toolUseResult={"file": "README.md"},
    ),
    entry("assistant", "a3", {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
    entry("system", "s1", subtype="turn_duration", content="12s"),
    {"type": "ai-title", "aiTitle": "README summary", "sessionId": SID},
    {"type": "agent_metadata", "agentType": "Explore"},
]


def messages(roles: list[str]) -> list[dict[str, Any]]:
    return [
        {"message_id": f"m{i}", "role": role, "content": e, "created_at": 1}
        for i, (role, e) in enumerate(zip(roles, TRANSCRIPT, strict=True))
    ]


ROLES = ["system", "user", "assistant", "assistant", "system", "user", "assistant"] + ["system"] * 3


def test_to_anthropic_messages() -> None:
    assert convert.to_anthropic_messages(messages(ROLES)) == [
        {"role": "user", "content": "Summarize README.md"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Read",
                    "input": {"path": "README.md"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "# Title"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    # metadata entries (titles, progress, system lines) hold no turn and no system text
    assert convert.to_anthropic_system(messages(ROLES)) is None


def test_to_openai_input() -> None:
    assert convert.to_openai_input(messages(ROLES)) == [
        {"role": "user", "content": "Summarize README.md"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_01",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"path": "README.md"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01", "content": "# Title"},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]


def test_dicts_without_transcript_markers_are_not_entries() -> None:
    # an OpenAI Responses item and a plain dict keep their own parsing
    item = {"type": "message", "role": "user", "content": "hi"}
    assert convert.to_anthropic_messages(
        [{"message_id": "m", "role": "user", "content": item, "created_at": 1}]
    ) == [{"role": "user", "content": "hi"}]
