"""Fixtures for the LangGraph adapter: a saver and a store on every backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from convostore import ConversationStore
from convostore_langgraph import ConvostoreSaver, ConvostoreStore


@pytest.fixture
def cstore(backend_url: str) -> Iterator[ConversationStore]:
    with ConversationStore(backend_url) as s:
        yield s


@pytest.fixture
def saver(cstore: ConversationStore) -> ConvostoreSaver:
    return ConvostoreSaver(cstore)


@pytest.fixture
def lgstore(cstore: ConversationStore) -> ConvostoreStore:
    return ConvostoreStore(cstore)
