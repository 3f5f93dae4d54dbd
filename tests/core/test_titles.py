"""Titles by convention: made once from the first exchange, never overwritten, never two."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import anyio
import pytest
from convostore import (
    TITLE_KEY,
    AsyncConversationStore,
    ConversationStore,
    MemoryValidationError,
    Message,
    aensure_title,
    ensure_title,
)


@pytest.fixture
def chat(store: ConversationStore) -> ConversationStore:
    store.append_message(conversation_id="c", role="system", content="be brief")
    store.append_message(conversation_id="c", role="user", content="Weather in Oslo?")
    store.append_message(conversation_id="c", role="tool", content="8°C")
    store.append_message(conversation_id="c", role="assistant", content="8°C and rain.")
    store.append_message(conversation_id="c", role="user", content="And tomorrow?")
    return store


class Generator:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[list[str]] = []
        self.delay = delay

    def __call__(self, messages: list[Message]) -> str:
        self.calls.append([m.content for m in messages])
        time.sleep(self.delay)
        return f"Title {len(self.calls)}"


def test_a_title_is_made_from_the_first_exchange_once(chat: ConversationStore) -> None:
    generate = Generator()
    assert ensure_title(chat, conversation_id="c", generate=generate) == "Title 1"
    assert generate.calls == [["be brief", "Weather in Oslo?", "8°C", "8°C and rain."]]
    assert ensure_title(chat, conversation_id="c", generate=generate) == "Title 1"
    assert len(generate.calls) == 1
    meta = chat.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata == {TITLE_KEY: "Title 1"}


def test_a_title_set_by_hand_is_kept(chat: ConversationStore) -> None:
    chat.update_conversation(conversation_id="c", metadata={"title": "Mine"})
    generate = Generator()
    assert ensure_title(chat, conversation_id="c", generate=generate) == "Mine"
    assert generate.calls == []


def test_nothing_to_title(store: ConversationStore) -> None:
    generate = Generator()
    assert ensure_title(store, conversation_id="missing", generate=generate) is None
    store.append_message(conversation_id="c", role="assistant", content="hello?")
    assert ensure_title(store, conversation_id="c", generate=generate) is None
    assert generate.calls == []


@pytest.mark.parametrize("made", ["", "   ", None, 42])
def test_a_bad_title_is_refused(chat: ConversationStore, made: Any) -> None:
    with pytest.raises(MemoryValidationError, match="generate must return a non-empty str"):
        ensure_title(chat, conversation_id="c", generate=lambda messages: made)
    meta = chat.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata is None


def test_concurrent_calls_in_one_process_generate_once(chat: ConversationStore) -> None:
    generate = Generator(delay=0.05)
    results: list[str | None] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                ensure_title(chat, conversation_id="c", generate=generate)
            )
        )
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(generate.calls) == 1 and results == ["Title 1"] * 6


def test_two_processes_store_one_title(tmp_path: Any, shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        store.append_message(conversation_id="c", role="user", content="hi")
    code = (
        "import sys, time\n"
        "from convostore import ConversationStore, ensure_title\n"
        "def gen(messages):\n"
        "    time.sleep(0.3)\n"
        "    return 'from ' + sys.argv[2]\n"
        "with ConversationStore(sys.argv[1]) as s:\n"
        "    print(ensure_title(s, conversation_id='c', generate=gen))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, shared_url, name], stdout=subprocess.PIPE, text=True
        )
        for name in ("p1", "p2")
    ]
    outputs = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    with ConversationStore(shared_url) as store:
        meta = store.get_conversation(conversation_id="c")
    assert meta is not None and meta.metadata is not None
    assert outputs == {meta.metadata["title"]}  # both answer with the one title stored


def test_if_missing_sets_only_absent_keys(store: ConversationStore) -> None:
    store.update_conversation(conversation_id="c", metadata={"a": 1})
    meta = store.update_conversation(
        conversation_id="c", metadata={"a": 2, "b": 3, "c": None}, if_missing=True
    )
    assert meta.metadata == {"a": 1, "b": 3}
    cursor = store.get_changes(conversation_id="c").cursor
    store.update_conversation(conversation_id="c", metadata={"a": 9}, if_missing=True)
    assert store.get_changes(conversation_id="c", after=cursor).items == []  # nothing changed


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_concurrent_async_calls_generate_once(
    chat: ConversationStore, anyio_backend: str
) -> None:
    astore = AsyncConversationStore(sync=chat)
    calls: list[int] = []

    async def generate(messages: list[Message]) -> str:
        calls.append(len(messages))
        await anyio.sleep(0.05)
        return "Async title"

    results: list[str | None] = []

    async def one() -> None:
        results.append(await aensure_title(astore, conversation_id="c", generate=generate))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
    assert calls == [4] and results == ["Async title"] * 5
    sync_calls: list[int] = []
    made = await aensure_title(
        astore, conversation_id="c", generate=lambda m: sync_calls.append(1) or "x"
    )
    assert made == "Async title" and sync_calls == []
