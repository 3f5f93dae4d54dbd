"""Fixtures for the OpenAI Agents session tests: a store on every backend, tracing off."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from agents import set_tracing_disabled
from convostore import AsyncConversationStore
from convostore_openai import ConvostoreSession

set_tracing_disabled(True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Agents SDK runs on asyncio


@pytest.fixture
async def store(backend_url: str) -> AsyncIterator[AsyncConversationStore]:
    async with AsyncConversationStore(backend_url) as s:
        yield s


@pytest.fixture
def make_session(store: AsyncConversationStore) -> Callable[..., ConvostoreSession]:
    """``make_session(session_id, **options)`` on the test's store."""

    def make(session_id: str = "s1", **options: object) -> ConvostoreSession:
        return ConvostoreSession(session_id, store=store, **options)  # type: ignore[arg-type]

    return make
