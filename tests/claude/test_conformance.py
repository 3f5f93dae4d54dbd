"""The SDK's own conformance suite, every contract run, under asyncio and trio, on every backend."""

from __future__ import annotations

import itertools

import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.testing.session_store_conformance import _OPTIONAL_METHODS, _has_optional
from convostore import ConversationStore
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio


def test_every_optional_method_is_detected() -> None:
    store = ConvostoreSessionStore("memory://")
    assert all(_has_optional(store, m, frozenset()) for m in _OPTIONAL_METHODS)


async def test_conformance(conversation_store: ConversationStore) -> None:
    # One database; each contract gets a tenant of its own, so the stores are isolated.
    tenants = itertools.count()

    def make() -> ConvostoreSessionStore:
        return ConvostoreSessionStore(store=conversation_store, tenant=f"t{next(tenants)}")

    await run_session_store_conformance(make)
    assert next(tenants) == 1 + 14  # the probe plus one store per contract: nothing skipped
