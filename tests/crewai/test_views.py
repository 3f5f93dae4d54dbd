"""``store.crewai_memory(...)``: the entry point this package registers on every store."""

from __future__ import annotations

from convostore import AsyncConversationStore, ConversationStore
from convostore_crewai import ConvostoreMemoryStorage
from crewai import Memory
from crewai.memory.types import MemoryRecord
from scripted import ScriptedLLM


def test_the_store_makes_a_crewai_memory_on_itself(backend_url: str) -> None:
    llm = ScriptedLLM(model="scripted", script={})
    with ConversationStore(backend_url) as store:
        for facade in (store, AsyncConversationStore(sync=store)):
            memory = facade.crewai_memory(llm=llm)
            assert isinstance(memory, Memory)
            storage = memory._storage
            assert isinstance(storage, ConvostoreMemoryStorage)
            assert storage.store is store  # the same database, not a second one
        storage.save([MemoryRecord(content="shared", scope="/")])
        assert [r.content for r in ConvostoreMemoryStorage(store).list_records()] == ["shared"]
