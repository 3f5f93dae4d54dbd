"""Items round-trip exactly; bad input gets a clear error and nothing is written."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from convostore import AsyncConversationStore, Limits, MemoryValidationError
from convostore_openai import ConvostoreSession, item_role

pytestmark = pytest.mark.anyio
Make = Callable[..., ConvostoreSession]

AGENTS_HISTORY: list[Any] = [
    {"content": "What's the weather in Paris?", "role": "user"},
    {"role": "developer", "content": "Answer briefly."},
    {
        "id": "rs_1",
        "summary": [{"text": "need weather", "type": "summary_text"}],
        "type": "reasoning",
        "encrypted_content": "gAAAA...",
    },
    {
        "arguments": '{"city": "Paris"}',
        "call_id": "call_1",
        "id": "fc_1",
        "name": "get_weather",
        "type": "function_call",
        "status": "completed",
    },
    {"call_id": "call_1", "output": "Sunny, 22C in Paris", "type": "function_call_output"},
    {
        "content": [
            {"annotations": [], "text": "It is sunny in Paris (22C).", "type": "output_text"}
        ],
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "type": "message",
    },
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}},
    {"type": "compaction", "encrypted_content": "opaque"},
]


async def test_items_round_trip_exactly(make_session: Make) -> None:
    session = make_session("exact")
    image = base64.b64encode(os.urandom(3 * 1024 * 1024)).decode()  # a 4 MB base64 image
    items: list[Any] = [
        *AGENTS_HISTORY,
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{image}"},
            ],
        },
        {
            "call_id": "c\u0000",
            "output": "nul \u0000 inside, \ud800 lone",
            "type": "function_call_output",
        },
        {"role": "user", "content": "extra keys", "x_custom": {"nested": [1, 2.5, None, True]}},
        {"type": "message", "role": "assistant", "content": "", "phase": "final_answer"},
    ]
    await session.add_items(items)
    stored = await session.get_items()
    assert stored == items
    # Key order is irrelevant and nothing is added: the JSON of each item is the same.
    assert [json.dumps(i, sort_keys=True) for i in stored] == [
        json.dumps(i, sort_keys=True) for i in items
    ]
    assert await session.get_items(limit=3) == items[-3:]
    assert await session.pop_item() == items[-1]
    assert await session.get_items() == items[:-1]


async def test_a_new_session_object_reads_the_same_items(store: AsyncConversationStore) -> None:
    await ConvostoreSession("again", store=store).add_items(AGENTS_HISTORY)
    assert await ConvostoreSession("again", store=store.sync).get_items() == AGENTS_HISTORY


def test_roles_follow_the_items() -> None:
    assert [item_role(i) for i in AGENTS_HISTORY] == [
        "user",
        "system",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "assistant",
    ]
    assert item_role({"type": "computer_call_output", "call_id": "c", "output": {}}) == "tool"
    assert item_role({"role": "system", "content": "x", "type": "message"}) == "system"


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ([{"role": "user", "content": "ok"}, "not a dict"], r"items\[1\] must be a dict .*got str"),
        ([{"role": "user", "content": "ok"}, None], r"items\[1\] must be a dict .*got NoneType"),
        ({"role": "user", "content": "a dict, not a list"}, r"items must be a list .*got dict"),
        ("text", r"items must be a list of item dicts, got str"),
        (
            [
                {"role": "user", "content": "ok"},
                {"type": "function_call_output", "output": float("nan")},
            ],
            r"items\[1\]\['output'\]: nan is not valid JSON",
        ),
        ([{"role": "user", "content": {1, 2}}], r"items\[0\]\['content'\]: set is not JSON"),
        ([{"role": "user", "content": object()}], r"items\[0\]\['content'\]: object is not JSON"),
        ([{"role": "user", 1: "int key"}], r"items\[0\]: keys must be str, got int"),
    ],
)
async def test_bad_items_are_refused_and_nothing_is_written(
    make_session: Make, items: Any, error: str
) -> None:
    session = make_session("bad")
    await session.add_items([{"role": "user", "content": "before"}])
    with pytest.raises(MemoryValidationError, match=error):
        await session.add_items(items)
    assert await session.get_items() == [{"role": "user", "content": "before"}]


async def test_an_item_over_the_size_limit_is_refused(backend_url: str) -> None:
    async with AsyncConversationStore(backend_url, limits=Limits(max_content_bytes=1000)) as small:
        session = ConvostoreSession("big", store=small)
        items: Any = [{"role": "user", "content": "ok"}, {"role": "user", "content": "x" * 2000}]
        with pytest.raises(
            MemoryValidationError,
            match=r"items\[1\] is \d+ bytes serialized; the limit is 1000 bytes",
        ):
            await session.add_items(items)
        assert await session.get_items() == []


async def test_bad_session_arguments(store: AsyncConversationStore) -> None:
    with pytest.raises(
        MemoryValidationError, match="session_id must be 1 to 256 bytes of UTF-8, got 257 bytes"
    ):
        ConvostoreSession("x" * 257, store=store)
    with pytest.raises(
        MemoryValidationError, match="session_id must be 1 to 256 bytes of UTF-8, got 0 bytes"
    ):
        ConvostoreSession("", store=store)
    with pytest.raises(MemoryValidationError, match="session_id must be a str, got int"):
        ConvostoreSession(7, store=store)  # type: ignore[arg-type]
    with pytest.raises(
        MemoryValidationError, match="max_items must be between 0 and 9223372036854775807, got -1"
    ):
        ConvostoreSession("s", store=store, max_items=-1)
    with pytest.raises(MemoryValidationError, match="max_items must be None or an int, got str"):
        ConvostoreSession("s", store=store, max_items="5")  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="store and url are mutually exclusive"):
        ConvostoreSession("s", store=store, url="memory://")
    with pytest.raises(MemoryValidationError, match="store must be a ConversationStore"):
        ConvostoreSession("s", store="memory://")  # type: ignore[arg-type]
    session = ConvostoreSession("s", store=store)
    with pytest.raises(MemoryValidationError, match="limit must be None or an int, got str"):
        await session.get_items(limit="3")  # type: ignore[arg-type]
    conversations = await store.list_conversations()
    assert conversations.items == []


async def test_session_from_a_url_owns_its_store(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'own.db'}"
    async with ConvostoreSession("mine", url=url) as session:
        await session.add_items([{"role": "user", "content": "hi"}])
    again = ConvostoreSession("mine", url=url)
    try:
        assert await again.get_items() == [{"role": "user", "content": "hi"}]
    finally:
        again.close()


async def test_default_store_is_the_cwd_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONVOSTORE_URL", raising=False)
    session = ConvostoreSession("default")
    try:
        await session.add_items([{"role": "user", "content": "hi"}])
    finally:
        await session.aclose()
    assert (tmp_path / "convostore.db").exists()


async def test_bad_options_are_refused_before_a_url_session_is_used(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'closed.db'}"
    with pytest.raises(MemoryValidationError, match="user_id must be 1 to 256 bytes"):
        ConvostoreSession("s", url=url, user_id="u" * 300)
    with pytest.raises(MemoryValidationError, match="tenant must be a callable"):
        ConvostoreSession("s", url=url, tenant="acme")  # type: ignore[arg-type]
