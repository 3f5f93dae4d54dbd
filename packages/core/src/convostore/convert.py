"""Stored messages to Anthropic Messages input and OpenAI Chat Completions input.

Content is read in any of the shapes an adapter or a caller stores: plain text, string lists,
Anthropic content blocks, Chat Completions parts (with ``metadata["tool_calls"]`` on assistant
messages and ``metadata["tool_call_id"]`` on tool messages) and OpenAI Responses items
(messages, client-side tool calls and their outputs; hosted tool calls, reasoning and
compaction are dropped). Both outputs come from one neutral form, so tool calls are paired the
same way: a call is kept only if the next turn answers it, and an answer only if the turn before
asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .models import Message, Role

Kind = Literal["system", "user", "results", "assistant"]
_DROPPED = {"reasoning", "compaction", "item_reference"}
_THINKING = {"thinking", "redacted_thinking"}


@dataclass
class _Text:
    text: str


@dataclass
class _Image:
    url: str  # an https URL or a data: URL


@dataclass
class _Call:
    id: str
    name: str
    arguments: Any  # as stored: a JSON string (Chat, Responses) or an object (Anthropic)


@dataclass
class _Result:
    call_id: str
    content: Any  # a str, or a list of parts
    is_error: bool = False


@dataclass
class _Raw:
    block: dict[str, Any]  # kept as given; only the Anthropic side takes thinking blocks


_Part = _Text | _Image | _Call | _Result | _Raw


@dataclass
class _Turn:
    kind: Kind
    parts: list[_Part] = field(default_factory=list)
    plain: bool = False  # stored as a plain string: render back as one


def _as_message(message: Message | Mapping[str, Any]) -> Message:
    return message if isinstance(message, Message) else Message.model_validate(message)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _image_from_source(source: Mapping[str, Any]) -> _Image | None:
    if source.get("type") == "base64":
        return _Image(f"data:{source.get('media_type')};base64,{source.get('data')}")
    if source.get("type") == "url":
        return _Image(str(source.get("url")))
    return None


def _parts(content: Any) -> list[_Part]:
    """Content blocks of any supported shape, in order."""
    if isinstance(content, str):
        return [_Text(content)]
    blocks = [content] if isinstance(content, Mapping) else list(content)
    parts: list[_Part] = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(_Text(block))
            continue
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
            parts.append(_Text(block["text"]))
        elif kind == "refusal":
            parts.append(_Text(str(block.get("refusal", ""))))
        elif kind == "image" and isinstance(block.get("source"), Mapping):
            image = _image_from_source(block["source"])
            parts.append(image if image else _Raw(dict(block)))
        elif kind == "image_url":
            url = block.get("image_url")
            parts.append(_Image(str(url.get("url") if isinstance(url, Mapping) else url)))
        elif kind == "input_image" and block.get("image_url"):
            parts.append(_Image(str(block["image_url"])))
        elif kind in ("input_image", "input_file"):  # Responses parts by file id or file data
            label = block.get("filename") or block.get("file_id") or block.get("file_url")
            parts.append(_Text(f"[{kind[6:]}: {label or 'attached'}]"))
        elif kind == "tool_use":
            parts.append(_Call(str(block.get("id")), str(block.get("name")), block.get("input")))
        elif kind == "tool_result":
            parts.append(
                _Result(
                    str(block.get("tool_use_id")),
                    block.get("content", ""),
                    bool(block.get("is_error", False)),
                )
            )
        elif kind not in _DROPPED:
            parts.append(_Raw(dict(block)))
    return parts


# OpenAI Responses items (the OpenAI Agents SDK's session items) ---------------------------

# Client-side tool calls and their outputs, paired by ``call_id``: the key holding the call's
# input, and the name to show for it when the item has none.
_RESPONSES_CALLS = {
    "function_call": ("arguments", None),
    "custom_tool_call": ("input", None),
    "computer_call": ("action", "computer"),
    "local_shell_call": ("action", "local_shell"),
    "shell_call": ("action", "shell"),
    "apply_patch_call": ("operation", "apply_patch"),
}
_RESPONSES_OUTPUTS = {f"{kind}_output" for kind in _RESPONSES_CALLS}
# Items with no Chat Completions or Messages equivalent: hosted tools that ran on the server
# (their results are in the assistant's answer), MCP bookkeeping, reasoning and compaction.
_RESPONSES_DROPPED = {
    *_DROPPED,
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_call",
    "mcp_approval_request",
    "mcp_approval_response",
    "tool_search_call",
    "tool_search_output",
    "additional_tools",
    "configuration_update",
    "program",
    "program_output",
}


_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
# Items whose content answers a tool: the outputs paired with a call, and the answers of
# hosted or MCP tools that have no Chat/Messages equivalent.
RESPONSES_TOOL_ANSWERS = frozenset(
    {*_RESPONSES_OUTPUTS, "tool_search_output", "program_output", "mcp_approval_response"}
)
_ROLE_OF_MESSAGE: dict[object, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


def responses_item_role(item: Mapping[str, Any]) -> Role:
    """The role an OpenAI Responses item is stored under: a message keeps its role
    (``developer`` becomes ``system``), a tool's answer is ``tool``, everything else the model
    produced (calls, reasoning, hosted tool calls, compaction) is ``assistant``."""
    kind = item.get("type")
    if kind is None or kind == "message":
        role = _ROLE_OF_MESSAGE.get(item.get("role"))
        if role is not None:
            return role
    return "tool" if kind in RESPONSES_TOOL_ANSWERS else "assistant"


def _responses_output(output: Any) -> Any:
    """A tool output as result content: a str, or a list of content parts."""
    if isinstance(output, str) or output is None:
        return output or ""
    if isinstance(output, Mapping):  # e.g. a computer screenshot
        if isinstance(output.get("image_url"), str):
            return [{"type": "input_image", "image_url": output["image_url"]}]
        return json.dumps(output, ensure_ascii=False)
    if isinstance(output, list) and all(isinstance(p, Mapping) for p in output):
        return output
    return json.dumps(output, ensure_ascii=False)


def _responses_item(item: Mapping[str, Any]) -> _Turn | None:
    """An OpenAI Responses item, or None if the content is not one."""
    kind = item.get("type")
    if kind in _RESPONSES_CALLS:
        key, default_name = _RESPONSES_CALLS[kind]
        name = item.get("name") or default_name
        call = _Call(str(item.get("call_id")), str(name), item.get(key))
        return _Turn("assistant", [call])
    if kind in _RESPONSES_OUTPUTS:
        output = _responses_output(item.get("output"))
        return _Turn("results", [_Result(str(item.get("call_id")), output)])
    if kind in _RESPONSES_DROPPED:
        return _Turn("assistant", [])
    if kind in ("message", None) and item.get("role") in _MESSAGE_ROLES and "content" in item:
        role: Kind = "system" if item["role"] in ("system", "developer") else item["role"]
        inner = item["content"]
        return _Turn(role, _parts(inner), plain=isinstance(inner, str))
    return None


def _transcript_entry(entry: Mapping[str, Any]) -> list[_Turn] | None:
    """A Claude Code transcript entry (one JSONL line: ``type`` plus ``uuid`` / ``sessionId``),
    or None if the content is not one. ``user`` / ``assistant`` entries carry a Messages-API
    message in ``message``; every other entry (progress, titles, tags, ...) holds no turn."""
    kind = entry.get("type")
    markers = {"uuid", "sessionId", "parentUuid"} & entry.keys()
    if not isinstance(kind, str) or not (markers or kind == "agent_metadata"):
        return None
    inner = entry.get("message")
    if kind not in ("user", "assistant") or not isinstance(inner, Mapping):
        return []
    role = inner.get("role") if inner.get("role") in ("user", "assistant") else kind
    return _turns(Message.model_construct(role=role, content=inner.get("content", ""), metadata={}))


def _turns(message: Message) -> list[_Turn]:
    content, metadata = message.content, message.metadata or {}
    if isinstance(content, Mapping) and (entry := _transcript_entry(content)) is not None:
        return entry
    if isinstance(content, Mapping):
        turn = _responses_item(content)
        if turn is not None:
            return [turn]
    parts = _parts(content)
    plain = isinstance(content, str)
    if message.role == "tool":
        call_id = metadata.get("tool_call_id")
        if call_id is not None and not any(isinstance(p, _Result) for p in parts):
            return [_Turn("results", [_Result(str(call_id), content)])]
        return [_Turn("results", [p for p in parts if isinstance(p, _Result)])]
    if message.role == "assistant":
        for call in metadata.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                fn = call["function"]
                parts.append(_Call(str(call.get("id")), str(fn.get("name")), fn.get("arguments")))
        return [_Turn("assistant", parts, plain=plain)]
    if message.role == "system":
        return [_Turn("system", parts, plain=plain)]
    results: list[_Part] = [p for p in parts if isinstance(p, _Result)]
    rest: list[_Part] = [p for p in parts if not isinstance(p, _Result)]
    turns = [_Turn("results", results)] if results else []
    return [*turns, _Turn("user", rest, plain=plain)] if rest else turns


def _merge(turns: Iterable[_Turn], kinds: set[Kind]) -> list[_Turn]:
    merged: list[_Turn] = []
    for turn in turns:
        if not turn.parts:
            continue
        if merged and merged[-1].kind == turn.kind and turn.kind in kinds:
            merged[-1] = _Turn(turn.kind, [*merged[-1].parts, *turn.parts])
        else:
            merged.append(turn)
    return merged


def _paired(messages: Sequence[Message | Mapping[str, Any]]) -> list[_Turn]:
    """Neutral turns with consecutive assistant and result turns merged and tool calls paired."""
    turns = _merge((t for m in messages for t in _turns(_as_message(m))), {"assistant", "results"})
    for i, turn in enumerate(turns):
        after = turns[i + 1] if i + 1 < len(turns) and turns[i + 1].kind == "results" else None
        if turn.kind == "assistant":
            answered = (
                {p.call_id for p in after.parts if isinstance(p, _Result)} if after else set()
            )
            turn.parts = [p for p in turn.parts if not isinstance(p, _Call) or p.id in answered]
            if all(isinstance(p, _Text) and not p.text for p in turn.parts):
                turn.parts = []  # nothing left to say once its calls are gone
        elif turn.kind == "results":
            before = turns[i - 1] if i > 0 and turns[i - 1].kind == "assistant" else None
            asked = {p.id for p in before.parts if isinstance(p, _Call)} if before else set()
            turn.parts = [p for p in turn.parts if isinstance(p, _Result) and p.call_id in asked]
    return _merge(turns, {"assistant", "results"})


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in _parts(content) if isinstance(p, _Text))


# -- Anthropic ------------------------------------------------------------------------------


def _anthropic_image(image: _Image) -> dict[str, Any]:
    if image.url.startswith("data:") and ";base64," in image.url:
        head, data = image.url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": head, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": image.url}}


def _anthropic_block(part: _Part) -> dict[str, Any] | None:
    if isinstance(part, _Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, _Image):
        return _anthropic_image(part)
    if isinstance(part, _Call):
        args = _arguments(part.arguments)
        return {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": args if isinstance(args, dict) else {"arguments": args},
        }
    if isinstance(part, _Result):
        content = part.content
        if not isinstance(content, str):
            content = [b for b in map(_anthropic_block, _parts(content)) if b is not None]
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": content,
        }
        if part.is_error:
            block["is_error"] = True
        return block
    return part.block


def to_anthropic_system(messages: Sequence[Message | Mapping[str, Any]]) -> str | None:
    """The system messages' text, for the Messages API's separate ``system`` parameter."""
    texts = [
        p.text
        for t in _paired(messages)
        if t.kind == "system"
        for p in t.parts
        if isinstance(p, _Text)
    ]
    return "\n\n".join(t for t in texts if t) or None


def to_anthropic_messages(messages: Sequence[Message | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages for ``anthropic.messages.create(messages=...)``; system text is left out (see
    ``to_anthropic_system``), tool results become user ``tool_result`` blocks, and consecutive
    turns of one role are merged."""
    out: list[dict[str, Any]] = []
    for turn in _paired(messages):
        if turn.kind == "system":
            continue
        role = "assistant" if turn.kind == "assistant" else "user"
        parts = [p for p in turn.parts if turn.kind != "assistant" or not isinstance(p, _Result)]
        if turn.plain and len(parts) == 1 and isinstance(parts[0], _Text) and parts[0].text:
            content: Any = parts[0].text
        else:
            content = [b for b in map(_anthropic_block, parts) if b is not None]
            if not content:
                continue
        if out and out[-1]["role"] == role:
            previous = out[-1]["content"]
            if isinstance(previous, str):
                previous = [{"type": "text", "text": previous}]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out[-1] = {"role": role, "content": [*previous, *content]}
        else:
            out.append({"role": role, "content": content})
    return out


# -- OpenAI Chat Completions ----------------------------------------------------------------


def _openai_part(part: _Part) -> dict[str, Any] | None:
    if isinstance(part, _Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, _Image):
        return {"type": "image_url", "image_url": {"url": part.url}}
    if isinstance(part, _Raw):
        return None if part.block.get("type") in _THINKING else part.block
    return None


def to_openai_input(messages: Sequence[Message | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages for ``openai.chat.completions.create(messages=...)``: roles kept, plain content
    passed through, tool calls as ``tool_calls`` and their results as ``tool`` messages."""
    out: list[dict[str, Any]] = []
    for turn in _paired(messages):
        if turn.kind == "results":
            out.extend(
                {"role": "tool", "tool_call_id": p.call_id, "content": _text_of(p.content)}
                for p in turn.parts
                if isinstance(p, _Result)
            )
            continue
        calls = [p for p in turn.parts if isinstance(p, _Call)]
        shown = [p for p in turn.parts if not (calls and isinstance(p, _Text) and not p.text)]
        parts = [b for b in map(_openai_part, shown) if b is not None]
        content: Any
        if turn.plain and len(parts) == 1 and parts[0].get("type") == "text":
            content = parts[0]["text"]
        else:
            content = parts or None
        message: dict[str, Any] = {"role": turn.kind, "content": content}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.arguments
                        if isinstance(c.arguments, str)
                        else json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for c in calls
            ]
        if content is None and not calls:
            continue
        out.append(message)
    return out
