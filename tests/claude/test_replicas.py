"""A session store opened from a URL with a real hot standby as its read replica."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_claude import ConvostoreSessionStore
from pg_cluster import Pair

pytestmark = pytest.mark.anyio

KEY: Any = {"project_key": "p", "session_id": "s"}


def entry(n: int) -> dict[str, Any]:
    return {"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"m{n}"}}


async def test_a_session_store_reads_the_standby_and_its_own_appends(
    pair: Pair, urls: tuple[str, str]
) -> None:
    primary, standby = urls
    app = f"t{uuid.uuid4().hex[:10]}"
    store = ConvostoreSessionStore(primary, replicas=[f"{standby}&application_name={app}"])
    try:
        await store.append(KEY, [entry(1)])
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        assert await store.load(KEY) == [entry(1)]
        assert any("convostore_" in s for s in pair.standby.statements(app)[before:])
        pair.pause_replay()
        await store.append(KEY, [entry(2)])
        assert await store.load(KEY) == [entry(1), entry(2)]
        assert [s["session_id"] for s in await store.list_sessions("p")] == ["s"]
    finally:
        pair.resume_replay()
        await store.aclose()


def test_replicas_go_with_a_url(urls: tuple[str, str]) -> None:
    primary, standby = urls
    with ConversationStore(primary) as base, pytest.raises(MemoryValidationError) as refused:
        ConvostoreSessionStore(store=base, replicas=[standby])
    assert refused.value.argument == "replicas"
