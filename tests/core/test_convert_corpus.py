"""The converters against the shared corpus ``tests/fixtures/converters.json``, which the
TypeScript client's tests (packages/client-ts) read too: both runtimes give byte-identical
JSON for every case. ``python tests/core/test_convert_corpus.py --write`` rewrites the
fixture's expected outputs from this module's CASES (then run both suites)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from convostore import to_anthropic_messages, to_anthropic_system, to_openai_input

FIXTURE = Path(__file__).parents[1] / "fixtures" / "converters.json"


def _m(
    role: str, content: Any, metadata: dict[str, Any] | None = None, n: int = 0
) -> dict[str, Any]:
    return {
        "messageId": f"msg_{n:04d}",
        "role": role,
        "content": content,
        "createdAt": 1_700_000_000_000 + n,
        "metadata": metadata,
    }


_PNG = "data:image/png;base64,iVBORw0KGgo="
CASES: dict[str, list[dict[str, Any]]] = {
    "plain text": [
        _m("system", "Be brief."),
        _m("user", "Hi", n=1),
        _m("assistant", "Hello!", n=2),
    ],
    "string lists": [_m("user", ["one", "two"]), _m("assistant", ["three"], n=1)],
    "unicode": [_m("user", 'Ça va? 你好 \U0001f600 "quoted" back\\slash\nline\ttab\u0001')],
    "multimodal user": [
        _m(
            "user",
            [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": _PNG}},
                {"type": "image_url", "image_url": "https://example.com/a.png"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"},
                },
                {"type": "image", "source": {"type": "file", "file_id": "f_1"}},
                {"type": "input_image", "image_url": _PNG},
                {"type": "input_image", "file_id": "file_9"},
                {"type": "input_file", "filename": "report.pdf"},
                {"type": "input_file"},
            ],
        )
    ],
    "one object content": [_m("user", {"type": "text", "text": "an object"})],
    "chat tool calls": [
        _m("user", "Weather in Paris?"),
        _m(
            "assistant",
            "",
            {
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "not json"},
                    },
                ]
            },
            n=1,
        ),
        _m("tool", "Sunny, 22C", {"tool_call_id": "call_1"}, n=2),
        _m("tool", [{"type": "text", "text": "14:00"}], {"tool_call_id": "call_2"}, n=3),
        _m("assistant", "Sunny and 22C at 14:00.", n=4),
    ],
    "anthropic blocks": [
        _m("user", "Add 2 and 3"),
        _m(
            "assistant",
            [
                {"type": "thinking", "thinking": "simple", "signature": "sig"},
                {"type": "text", "text": "Adding."},
                {"type": "tool_use", "id": "tu_1", "name": "add", "input": {"a": 2, "b": 3}},
                {"type": "tool_use", "id": "tu_2", "name": "noop", "input": [1, 2]},
            ],
            n=1,
        ),
        _m(
            "user",
            [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "5"},
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_2",
                    "content": [
                        {"type": "text", "text": "failed"},
                        {"type": "text", "text": "twice"},
                    ],
                    "is_error": True,
                },
                {"type": "text", "text": "And now?"},
            ],
            n=2,
        ),
        _m(
            "assistant",
            [{"type": "text", "text": "5."}, {"type": "redacted_thinking", "data": "x"}],
            n=3,
        ),
    ],
    "unanswered calls and orphan results": [
        _m("user", "go"),
        _m("assistant", [{"type": "tool_use", "id": "lost", "name": "f", "input": {}}], n=1),
        _m("user", "never mind", n=2),
        _m("tool", "orphan", {"tool_call_id": "nobody"}, n=3),
        _m("tool", "no id at all", n=4),
    ],
    "same role merged": [
        _m("user", "first"),
        _m("user", [{"type": "text", "text": "second"}], n=1),
        _m("assistant", "a"),
        _m("assistant", "b", n=3),
        _m("system", ["sys one", "sys two"], n=4),
    ],
    "responses items": [
        _m("user", {"type": "message", "role": "user", "content": "Run it"}),
        _m(
            "system",
            {"role": "developer", "content": [{"type": "input_text", "text": "dev note"}]},
            n=1,
        ),
        _m("assistant", {"type": "reasoning", "summary": []}, n=2),
        _m(
            "assistant",
            {"type": "function_call", "call_id": "fc_1", "name": "run", "arguments": '{"x": 1}'},
            n=3,
        ),
        _m(
            "assistant",
            {"type": "computer_call", "call_id": "cc_1", "action": {"type": "click", "x": 1}},
            n=4,
        ),
        _m("tool", {"type": "function_call_output", "call_id": "fc_1", "output": "done"}, n=5),
        _m(
            "tool",
            {"type": "computer_call_output", "call_id": "cc_1", "output": {"image_url": _PNG}},
            n=6,
        ),
        _m("assistant", {"type": "web_search_call", "id": "ws", "status": "completed"}, n=7),
        _m(
            "assistant",
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "All done."},
                    {"type": "refusal", "refusal": "but not that"},
                ],
            },
            n=8,
        ),
        _m(
            "assistant",
            {"type": "custom_tool_call", "call_id": "ct", "name": "", "input": "raw"},
            n=9,
        ),
        _m(
            "tool",
            {"type": "custom_tool_call_output", "call_id": "ct", "output": {"k": [1, "v"]}},
            n=10,
        ),
        _m(
            "assistant",
            {"type": "shell_call", "call_id": "sh", "action": {"commands": ["ls"]}},
            n=11,
        ),
        _m(
            "tool",
            {
                "type": "shell_call_output",
                "call_id": "sh",
                "output": [{"type": "output_text", "text": "a b"}],
            },
            n=12,
        ),
    ],
    "claude code transcript": [
        _m(
            "user",
            {
                "type": "user",
                "uuid": "u1",
                "sessionId": "s",
                "message": {"role": "user", "content": "hello"},
            },
        ),
        _m(
            "assistant",
            {
                "type": "assistant",
                "uuid": "u2",
                "parentUuid": "u1",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "reading"},
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Read",
                            "input": {"path": "a.txt"},
                        },
                    ],
                },
            },
            n=1,
        ),
        _m(
            "user",
            {
                "type": "user",
                "uuid": "u3",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "text of a"}
                    ],
                },
            },
            n=2,
        ),
        _m("assistant", {"type": "progress", "uuid": "u4", "data": {}}, n=3),
        _m("assistant", {"type": "agent_metadata", "agent": "x"}, n=4),
    ],
    "unknown blocks kept": [
        _m(
            "user",
            [
                {"type": "document", "source": {"type": "text", "data": "doc"}},
                {"kind": "no type"},
                5,
                None,
            ],
        ),
        _m("assistant", [{"type": "text", "text": ""}], n=1),
        _m("assistant", [{"type": "text", "text": 7}], n=2),
    ],
    "empty": [],
}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _outputs(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {
        "anthropic": _dump(to_anthropic_messages(messages)),
        "system": _dump(to_anthropic_system(messages)),
        "openai": _dump(to_openai_input(messages)),
    }


def _corpus() -> list[dict[str, Any]]:
    return [{"name": name, "messages": ms, **_outputs(ms)} for name, ms in CASES.items()]


def test_the_fixture_holds_these_cases() -> None:
    stored = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert [c["name"] for c in stored] == list(CASES)
    assert [c["messages"] for c in stored] == list(CASES.values())


@pytest.mark.parametrize("name", list(CASES))
def test_python_converters_give_the_fixture_output(name: str) -> None:
    stored = {c["name"]: c for c in json.loads(FIXTURE.read_text(encoding="utf-8"))}
    case = stored[name]
    assert _outputs(case["messages"]) == {k: case[k] for k in ("anthropic", "system", "openai")}


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    FIXTURE.write_text(json.dumps(_corpus(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(CASES)} cases to {FIXTURE}")
