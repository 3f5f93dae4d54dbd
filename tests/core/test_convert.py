"""to_openai_input / to_anthropic_messages on the shapes the core stores."""

from __future__ import annotations

from typing import Any

from convostore import (
    ConversationStore,
    Message,
    to_anthropic_messages,
    to_anthropic_system,
    to_openai_input,
)


def msg(role: str, content: Any, **metadata: Any) -> Message:
    return Message(
        message_id=f"msg_{id(content)}",
        role=role,
        content=content,
        created_at=0,
        metadata=metadata or None,
    )  # type: ignore[arg-type]


TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
}


def test_plain_text_passes_through_unchanged() -> None:
    history = [msg("system", "be brief"), msg("user", "hi"), msg("assistant", "hello")]
    assert to_openai_input(history) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    assert to_anthropic_messages(history) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    assert to_anthropic_system(history) == "be brief"
    assert to_anthropic_system(history[1:]) is None


def test_string_lists_and_images_become_parts_and_blocks() -> None:
    history = [
        msg(
            "user",
            ["look at", {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
        ),
    ]
    assert to_openai_input(history) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look at"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    ]
    assert to_anthropic_messages(history) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look at"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                },
            ],
        }
    ]


def test_chat_tool_calls_map_to_tool_use_and_tool_result() -> None:
    history = [
        msg("user", "weather in Oslo?"),
        msg("assistant", "", tool_calls=[TOOL_CALL]),
        msg("tool", "sunny", tool_call_id="call_1"),
        msg("assistant", "It is sunny."),
    ]
    assert to_openai_input(history) == [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
    ]
    assert to_anthropic_messages(history) == [
        {"role": "user", "content": "weather in Oslo?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}],
        },
        {"role": "assistant", "content": "It is sunny."},
    ]


def test_anthropic_blocks_map_to_chat_tool_calls() -> None:
    history = [
        msg("user", "add 2 and 3"),
        msg(
            "assistant",
            [
                {"type": "thinking", "thinking": "easy", "signature": "sig"},
                {"type": "text", "text": "Calling add."},
                {"type": "tool_use", "id": "tu_1", "name": "add", "input": {"a": 2, "b": 3}},
            ],
        ),
        msg(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_1",
                    "content": [{"type": "text", "text": "5"}],
                }
            ],
        ),
    ]
    assert to_openai_input(history) == [
        {"role": "user", "content": "add 2 and 3"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Calling add."}],
            "tool_calls": [
                {
                    "id": "tu_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "tu_1", "content": "5"},
    ]
    anthropic = to_anthropic_messages(history)
    assert anthropic[1]["content"][0] == {
        "type": "thinking",
        "thinking": "easy",
        "signature": "sig",
    }
    assert anthropic[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_1",
                "content": [{"type": "text", "text": "5"}],
            }
        ],
    }


def test_consecutive_same_role_turns_merge_for_anthropic() -> None:
    history = [msg("user", "one"), msg("user", "two"), msg("assistant", "ok")]
    assert to_anthropic_messages(history) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {"role": "assistant", "content": "ok"},
    ]
    assert len(to_openai_input(history)) == 3


def test_a_page_cut_between_call_and_result_stays_valid() -> None:
    call = msg("assistant", "", tool_calls=[TOOL_CALL])
    result = msg("tool", "sunny", tool_call_id="call_1")
    # the result without its call (the page starts after the call) is dropped ...
    assert to_openai_input([result, msg("assistant", "It is sunny.")]) == [
        {"role": "assistant", "content": "It is sunny."}
    ]
    # ... and so is a call whose result is not in the page
    assert to_openai_input([msg("user", "hi"), call]) == [{"role": "user", "content": "hi"}]
    assert to_anthropic_messages([msg("user", "hi"), call]) == [{"role": "user", "content": "hi"}]
    # a result that does not follow its call directly is dropped with the call
    history = [call, msg("user", "interrupting"), result]
    assert to_openai_input(history) == [{"role": "user", "content": "interrupting"}]


def test_converters_take_stored_messages_and_camel_case_dicts(store: ConversationStore) -> None:
    store.append_message(conversation_id="c", role="user", content="hi")
    messages = store.get_messages(conversation_id="c")
    as_json = [m.model_dump(by_alias=True) for m in messages]
    assert (
        store.to_openai_input(as_json)
        == store.to_openai_input(messages)
        == [{"role": "user", "content": "hi"}]
    )
    assert ConversationStore.to_anthropic_messages(messages) == [{"role": "user", "content": "hi"}]
