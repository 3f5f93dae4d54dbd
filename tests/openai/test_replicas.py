"""A session opened from a URL with a real hot standby as its read replica."""

from __future__ import annotations

import uuid

import pytest
from convostore import AsyncConversationStore, MemoryValidationError
from convostore_openai import ConvostoreSession
from pg_cluster import Pair

pytestmark = pytest.mark.anyio


async def test_a_session_reads_the_standby_and_its_own_items(
    pair: Pair, urls: tuple[str, str]
) -> None:
    primary, standby = urls
    app = f"t{uuid.uuid4().hex[:10]}"
    session = ConvostoreSession("s1", url=primary, replicas=[f"{standby}&application_name={app}"])
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        assert [i["content"] for i in await session.get_items()] == ["hello"]  # type: ignore[typeddict-item]
        assert any("convostore_messages" in s for s in pair.standby.statements(app)[before:])
        pair.pause_replay()
        await session.add_items([{"role": "assistant", "content": "hi"}])
        got = await session.get_items()
        assert [i["content"] for i in got] == ["hello", "hi"]  # type: ignore[typeddict-item]
    finally:
        pair.resume_replay()
        await session.aclose()


async def test_replicas_go_with_a_url(urls: tuple[str, str]) -> None:
    primary, standby = urls
    store = AsyncConversationStore(primary)
    try:
        with pytest.raises(MemoryValidationError) as refused:
            ConvostoreSession("s", store=store, replicas=[standby])
        assert refused.value.argument == "replicas"
    finally:
        await store.aclose()
