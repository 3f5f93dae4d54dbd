"""Hostile input at the CrewAI glue's entry points, on every backend: record ids and texts
with NUL, lone surrogates or past the limits; huge integers; metadata nested deeper than JSON
goes; bad conversation ids for recording. Each is a ``MemoryValidationError`` before anything
is written, the same on memory, SQLite and PostgreSQL (never a ``StorageError``)."""

from __future__ import annotations

from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_crewai import ConvostoreMemoryStorage, keyword_embedder, record
from crewai.memory.types import MemoryRecord
from crews import make_crew
from scripted import ScriptedLLM


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


@pytest.fixture
def storage(backend_url: str) -> Any:
    s = ConvostoreMemoryStorage(backend_url)
    s.save([MemoryRecord(content="kept", scope="/s")])
    yield s
    s.close()


def _contents(storage: ConvostoreMemoryStorage) -> list[str]:
    return sorted(r.content for r in storage.list_records())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": "nul \x00 inside"}, r"records\[1\]\.content must not contain NUL"),
        ({"content": "lone \ud800"}, r"records\[1\]\.content is not valid UTF-8"),
        ({"scope": "/a\x00b"}, r"records\[1\]\.scope must not contain NUL"),
        ({"categories": ["ok", "b\x00"]}, r"records\[1\]\.categories\[\] must not contain NUL"),
        ({"source": "\udfff"}, r"records\[1\]\.source is not valid UTF-8"),
        ({"id": "x" * (1 << 20)}, r"records\[1\]\.id must be 1 to 256 bytes"),
        ({"id": "a\x00"}, r"records\[1\]\.id must not contain NUL"),
        ({"metadata": {"deep": _deep(10_000)}}, r"records\[1\]\.metadata is nested too deeply"),
    ],
)
def test_bad_records_are_refused_and_nothing_is_written(
    storage: ConvostoreMemoryStorage, fields: dict[str, Any], message: str
) -> None:
    before = _contents(storage)
    bad = MemoryRecord.model_construct(**{**MemoryRecord(content="x").model_dump(), **fields})
    with pytest.raises(MemoryValidationError, match=message):
        storage.save([MemoryRecord(content="fine"), bad])
    assert _contents(storage) == before


def test_awkward_metadata_round_trips(storage: ConvostoreMemoryStorage) -> None:
    record = MemoryRecord(content="m", metadata={"nul": "a\x00b", "lone": "\ud800"})
    storage.save([record])
    got = storage.get_record(record.id)
    assert got is not None and got.metadata == record.metadata


@pytest.mark.parametrize("value", [2**63, 2**70, -1, True, "5"])
def test_huge_or_wrong_integers_are_refused(storage: ConvostoreMemoryStorage, value: Any) -> None:
    with pytest.raises(MemoryValidationError):
        storage.search(keyword_embedder(["kept"])[0], limit=value)
    with pytest.raises(MemoryValidationError):
        storage.list_records(limit=value)


@pytest.mark.parametrize("scope", ["/a\x00", "\ud800"])
def test_bad_scopes_are_refused_on_reads_and_deletes(
    storage: ConvostoreMemoryStorage, scope: str
) -> None:
    for call in (
        lambda: storage.list_records(scope),
        lambda: storage.count(scope),
        lambda: storage.delete(scope_prefix=scope),
    ):
        with pytest.raises(MemoryValidationError, match="scope"):
            call()
    assert _contents(storage) == ["kept"]


@pytest.mark.parametrize(
    ("conversation_id", "message"),
    [("a\x00", "must not contain NUL"), ("\ud800", "lone surrogate"), ("x" * 300, "256 bytes")],
)
def test_a_recorder_refuses_bad_conversation_ids(
    backend_url: str, conversation_id: str, message: str
) -> None:
    crew = make_crew(ScriptedLLM(model="scripted", script={}))
    with ConversationStore(backend_url) as store:
        with pytest.raises(MemoryValidationError, match=f"conversation_id .*{message}"):
            record(crew, store, conversation_id)
        assert store.list_conversations().items == []
