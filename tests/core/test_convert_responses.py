"""OpenAI Responses items (an OpenAI Agents session's history) to Chat Completions and Anthropic
Messages input: tool calls paired, items with no counterpart left out, never an invalid block."""

from __future__ import annotations

from typing import Any

from convostore import to_anthropic_messages, to_anthropic_system, to_openai_input

ROLES = {"function_call_output": "tool", "custom_tool_call_output": "tool"}


def history(*items: dict[str, Any]) -> list[dict[str, Any]]:
    """Stored messages holding ``items``, as the OpenAI session adapter stores them."""
    out = []
    for n, item in enumerate(items):
        role = item.get("role") if item.get("type", "message") == "message" else None
        role = {"developer": "system"}.get(role, role) if role else None
        out.append(
            {
                "message_id": f"m{n}",
                "role": role or ROLES.get(item["type"], "assistant"),
                "content": item,
                "created_at": n,
            }
        )
    return out


USER = {"role": "user", "content": "Weather in Paris?"}
REASONING = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]}
CALL = {
    "type": "function_call",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "id": "fc_1",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}
ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
}


def test_an_agents_tool_turn() -> None:
    messages = history(USER, REASONING, CALL, OUTPUT, ANSWER)
    assert to_openai_input(messages) == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    # the arguments string exactly as stored
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
    ]
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "Sunny"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
    ]


def test_a_window_starting_at_an_output_and_an_unanswered_call_are_left_out() -> None:
    pending = {**CALL, "call_id": "call_2", "id": "fc_2"}
    messages = history(OUTPUT, ANSWER, USER, pending)
    expected_chat = [
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert to_openai_input(messages) == expected_chat
    assert to_anthropic_messages(messages) == [
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
        {"role": "user", "content": "Weather in Paris?"},
    ]


def test_hosted_tool_items_and_compaction_are_left_out() -> None:
    hosted = [
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"]},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "AAAA"},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "s", "name": "n", "arguments": "{}"},
        {"type": "compaction", "encrypted_content": "opaque"},
        {"type": "item_reference", "id": "msg_0"},
    ]
    messages = history(USER, *hosted, ANSWER)
    assert to_openai_input(messages) == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
    ]
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
    ]


def test_parallel_calls_and_rich_outputs() -> None:
    image = "data:image/png;base64,iVBORw0KGgo="
    second = {**CALL, "call_id": "call_2", "id": "fc_2", "arguments": '{"city": "Rome"}'}
    rich = {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [
            {"type": "input_text", "text": "Rome:"},
            {"type": "input_image", "image_url": image},
        ],
    }
    messages = history(USER, CALL, second, OUTPUT, rich)
    chat = to_openai_input(messages)
    assert [c["id"] for c in chat[1]["tool_calls"]] == ["call_1", "call_2"]
    assert chat[2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Rome:"},
    ]
    anthropic = to_anthropic_messages(messages)
    assert anthropic[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "Sunny"},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": [
                    {"type": "text", "text": "Rome:"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                ],
            },
        ],
    }


def test_custom_and_computer_tools_pair_like_functions() -> None:
    custom = {"type": "custom_tool_call", "call_id": "ct_1", "name": "grep", "input": "needle"}
    custom_out = {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "found"}
    computer = {
        "type": "computer_call",
        "call_id": "cc_1",
        "id": "cu_1",
        "action": {"type": "click", "x": 1, "y": 2},
        "pending_safety_checks": [],
        "status": "completed",
    }
    shot = {
        "type": "computer_call_output",
        "call_id": "cc_1",
        "output": {"type": "computer_screenshot", "image_url": "https://example.test/s.png"},
    }
    messages = history(USER, custom, custom_out, computer, shot)
    chat = to_openai_input(messages)
    assert chat[1]["tool_calls"][0]["function"] == {"name": "grep", "arguments": "needle"}
    assert chat[3]["tool_calls"][0]["function"] == {
        "name": "computer",
        "arguments": '{"type": "click", "x": 1, "y": 2}',
    }
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "assistant", "tool"]
    anthropic = to_anthropic_messages(messages)
    assert anthropic[1]["content"][0]["input"] == {"arguments": "needle"}
    assert anthropic[3]["content"][0]["input"] == {"type": "click", "x": 1, "y": 2}
    assert anthropic[4]["content"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://example.test/s.png"}}
    ]


def test_developer_messages_files_and_images_by_id() -> None:
    messages = history(
        {"role": "developer", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Read this"},
                {
                    "type": "input_file",
                    "filename": "a.pdf",
                    "file_data": "data:application/pdf;base64,AA",
                },
                {"type": "input_image", "file_id": "file_123", "detail": "auto"},
            ],
        },
    )
    assert to_anthropic_system(messages) == "Be brief."
    expected_parts = ["Read this", "[file: a.pdf]", "[image: file_123]"]
    anthropic = to_anthropic_messages(messages)
    assert [b["text"] for b in anthropic[0]["content"]] == expected_parts
    chat = to_openai_input(messages)
    assert chat[0] == {"role": "system", "content": "Be brief."}
    assert [p["text"] for p in chat[1]["content"]] == expected_parts


def test_the_role_a_responses_item_is_stored_under() -> None:
    from convostore import responses_item_role

    cases = {
        "user": {"role": "user", "content": "hi"},
        "system": {"type": "message", "role": "developer", "content": "be brief"},
        "assistant": {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        "tool": {"type": "function_call_output", "call_id": "c", "output": "4"},
    }
    for role, item in cases.items():
        assert responses_item_role(item) == role
    for kind in ("computer_call_output", "tool_search_output", "mcp_approval_response"):
        assert responses_item_role({"type": kind}) == "tool"
    for kind in ("reasoning", "web_search_call", "compaction"):
        assert responses_item_role({"type": kind}) == "assistant"
