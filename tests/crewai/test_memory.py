"""``crewai.Memory`` on the convostore database: keyword search, no vector database."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest
from convostore import ConversationStore, Limits, MemoryValidationError
from convostore_crewai import (
    ConvostoreMemoryStorage,
    convostore_memory,
    keyword_embedder,
    record,
)
from crewai import Memory
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord
from crews import RESEARCHER, make_crew
from scripted import ScriptedLLM, final


def rec(content: str, scope: str = "/", **fields: object) -> MemoryRecord:
    return MemoryRecord(content=content, scope=scope, **fields)  # type: ignore[arg-type]


def query(text: str) -> list[float]:
    return keyword_embedder([text])[0]


def test_it_is_a_storage_backend() -> None:
    storage = ConvostoreMemoryStorage("memory://")
    assert isinstance(storage, StorageBackend)
    storage.close()


def test_records_round_trip_and_search_by_keyword(backend_url: str) -> None:
    storage = ConvostoreMemoryStorage(backend_url)
    try:
        when = datetime(2026, 1, 2, 3, 4, 5, 678901)
        pg = rec(
            "PostgreSQL scales across machines",
            "/crew/research",
            categories=["db", "scale"],
            metadata={"k": 1, "nested": {"a": [1, 2]}},
            importance=0.9,
            created_at=when,
            last_accessed=when,
            source="alice",
            private=True,
        )
        sqlite = rec("SQLite is the embedded default", "/crew/research/sub", categories=["db"])
        cats = rec("Cats sleep most of the day", "/pets")
        storage.save([pg, sqlite, cats])

        got = storage.get_record(pg.id)
        assert got is not None
        assert got.model_dump() == pg.model_dump()
        assert storage.get_record("missing") is None

        hits = storage.search(query("Which database scales? PostgreSQL"), limit=5)
        assert [r.id for r, _ in hits] == [pg.id]
        assert 0.0 < hits[0][1] <= 1.0
        both = storage.search(query("default database: SQLite or PostgreSQL"), limit=5)
        assert {r.id for r, _ in both} == {pg.id, sqlite.id}
        assert storage.search(query("sqlite"), scope_prefix="/pets") == []
        assert [r.id for r, _ in storage.search(query("sqlite"), scope_prefix="/crew")] == [
            sqlite.id
        ]
        assert storage.search(query("PostgreSQL SQLite"), categories=["scale"])[0][0].id == pg.id
        assert [
            r.id for r, _ in storage.search(query("PostgreSQL SQLite"), metadata_filter={"k": 1})
        ] == [pg.id]
        assert storage.search(query("PostgreSQL"), min_score=1.01) == []
        assert storage.search(query("the and of")) == []  # only stopwords: nothing to look up
        exact = storage.search(query("PostgreSQL scales across machines"))
        assert exact[0][1] == pytest.approx(1.0)
    finally:
        storage.close()


def test_scopes_categories_counts_and_listing(backend_url: str) -> None:
    storage = ConvostoreMemoryStorage(backend_url)
    try:
        base = datetime(2026, 1, 1)
        storage.save(
            [
                rec("one", "/a", categories=["x"], created_at=base),
                rec("two", "/a/b", categories=["x", "y"], created_at=base + timedelta(days=1)),
                rec("three", "/a/b/c", created_at=base + timedelta(days=2)),
                rec("four", "/ab", categories=["y"], created_at=base + timedelta(days=3)),
            ]
        )
        assert storage.count() == 4
        assert storage.count("/a") == 3  # "/ab" is a sibling, not a child
        assert storage.list_scopes("/") == ["/a", "/ab"]
        assert storage.list_scopes("/a") == ["/a/b"]
        assert storage.list_categories() == {"x": 2, "y": 2}
        assert storage.list_categories("/a") == {"x": 2, "y": 1}
        assert [r.content for r in storage.list_records()] == ["four", "three", "two", "one"]
        assert [r.content for r in storage.list_records("/a", limit=2, offset=1)] == [
            "two",
            "one",
        ]
        info = storage.get_scope_info("/a/")
        assert (info.path, info.record_count, info.categories, info.child_scopes) == (
            "/a",
            3,
            ["x", "y"],
            ["/a/b"],
        )
        assert (info.oldest_record, info.newest_record) == (base, base + timedelta(days=2))
        assert storage.delete(older_than=base + timedelta(days=1)) == 1
        assert storage.delete(scope_prefix="/a", categories=["y"]) == 1
        assert storage.delete(metadata_filter={"missing": True}) == 0
        storage.reset("/a")
        assert [r.content for r in storage.list_records()] == ["four"]
        storage.reset()
        assert storage.count() == 0
    finally:
        storage.close()


def test_update_replaces_content_and_keywords(backend_url: str) -> None:
    storage = ConvostoreMemoryStorage(backend_url)
    try:
        r = rec("redis caches sessions")
        storage.save([r])
        storage.update(r.model_copy(update={"content": "memcached caches pages"}))
        assert storage.search(query("redis")) == []
        assert [x.id for x, _ in storage.search(query("memcached"))] == [r.id]
        assert storage.count() == 1
        storage.touch_records([r.id])
        touched = storage.get_record(r.id)
        assert touched is not None and touched.last_accessed >= r.last_accessed
    finally:
        storage.close()


def test_records_persist_across_opens(shared_url: str) -> None:
    first = ConvostoreMemoryStorage(shared_url)
    r = rec("durable keyword memory")
    first.save([r])
    first.close()
    second = ConvostoreMemoryStorage(shared_url)
    try:
        assert [x.id for x, _ in second.search(query("durable"))] == [r.id]
    finally:
        second.close()


def test_async_methods() -> None:
    storage = ConvostoreMemoryStorage("memory://")

    async def main() -> None:
        await storage.asave([rec("async keyword record")])
        hits = await storage.asearch(query("keyword"))
        assert len(hits) == 1
        assert await storage.adelete(record_ids=[hits[0][0].id]) == 1

    asyncio.run(main())
    storage.close()


def test_bad_input_is_refused_before_anything_is_written() -> None:
    store = ConversationStore("memory://", limits=Limits(max_content_bytes=10))
    storage = ConvostoreMemoryStorage(store)
    with pytest.raises(
        MemoryValidationError, match=r"records\[1\]\.content is 11 bytes; the limit is 10"
    ):
        storage.save([rec("ok"), rec("x" * 11)])
    assert storage.count() == 0
    with pytest.raises(MemoryValidationError, match="query_embedding has 3 dimensions"):
        storage.search([0.1, 0.2, 0.3])
    with pytest.raises(MemoryValidationError, match="limit must be between 1 and"):
        storage.search(query("ok"), limit=0)
    with pytest.raises(MemoryValidationError, match="offset must be between 0 and"):
        storage.list_records(offset=-1)
    with pytest.raises(MemoryValidationError, match=r"records\[0\]\.id must be 1 to 256 bytes"):
        storage.save([rec("ok", id="i" * 300)])
    with pytest.raises(MemoryValidationError, match=r"records\[0\]\.metadata is not JSON"):
        storage.save([rec("ok", metadata={"bad": float("nan")})])
    store.close()


def test_memory_remembers_and_recalls_offline(backend_url: str) -> None:
    memory = Memory(
        storage=ConvostoreMemoryStorage(backend_url),
        embedder=keyword_embedder,
        llm=ScriptedLLM(model="scripted"),
    )
    try:
        memory.remember(
            "The team chose PostgreSQL for the billing service",
            scope="/decisions",
            categories=["db"],
            importance=0.9,
        )
        memory.remember(
            "Lunch is at noon on Fridays", scope="/office", categories=["misc"], importance=0.2
        )
        matches = memory.recall("which database for billing", depth="shallow")
        assert matches[0].record.content == "The team chose PostgreSQL for the billing service"
        assert all("Lunch" not in m.record.content for m in matches)
    finally:
        memory.close()


def test_a_crew_with_memory_runs_offline_and_remembers(backend_url: str) -> None:
    llm = ScriptedLLM(
        model="scripted",
        script={
            RESEARCHER: [final("The billing service runs on PostgreSQL."), final("noted")],
            "Writer": [final("Done."), final("Done again.")],
        },
    )
    with ConversationStore(backend_url) as store:
        memory = convostore_memory(store, llm=llm)
        crew = make_crew(llm, memory=memory)
        record(crew, store, "c")
        crew.kickoff(inputs={"user_message": "Where does billing run?"})
        storage = memory._storage
        assert isinstance(storage, ConvostoreMemoryStorage)
        contents = [r.content for r in storage.list_records()]
        assert "The billing service runs on PostgreSQL." in contents

        crew.kickoff(inputs={"user_message": "Remind me: billing service database?"})
        prompt = llm.prompts_of(RESEARCHER)[-1]
        assert "The billing service runs on PostgreSQL." in prompt
        # Memory and transcript share one database and stay apart.
        assert len(store.get_history(conversation_id="c")) == 6
        memory.close()
