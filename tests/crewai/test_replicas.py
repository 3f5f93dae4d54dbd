"""The CrewAI glue opened from a URL with a real hot standby as its read replica
(``replicas=``): memory searches and the recorded conversation read on the standby, each read
still seeing the writes this process made (the standby's replay paused); a store passed in
keeps its own replicas."""

from __future__ import annotations

import uuid

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore.backends.replicas import ReplicatedBackend
from convostore_crewai import (
    ConvostoreMemoryStorage,
    TaskCallback,
    convostore_memory,
    keyword_embedder,
    record,
)
from crewai.memory.types import MemoryRecord
from crews import RESEARCHER, make_crew, react_script
from pg_cluster import Pair
from scripted import ScriptedLLM


def named(url: str) -> tuple[str, str]:
    app = f"t{uuid.uuid4().hex[:10]}"
    return f"{url}&application_name={app}", app


def test_memory_searches_the_standby_and_its_own_saves(pair: Pair, urls: tuple[str, str]) -> None:
    primary, standby = urls
    replica, app = named(standby)
    storage = ConvostoreMemoryStorage(primary, replicas=[replica])
    try:
        assert isinstance(storage.backend, ReplicatedBackend)
        storage.save([MemoryRecord(content="Billing runs on PostgreSQL", scope="/decisions")])
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        hits = storage.search(keyword_embedder(["billing database"])[0])
        assert [r.content for r, _ in hits] == ["Billing runs on PostgreSQL"]
        assert any("crewai" in s for s in pair.standby.statements(app)[before:])
        pair.pause_replay()
        storage.save([MemoryRecord(content="Billing moves to Citus", scope="/decisions")])
        hits = storage.search(keyword_embedder(["billing"])[0])
        assert sorted(r.content for r, _ in hits) == [
            "Billing moves to Citus",
            "Billing runs on PostgreSQL",
        ]
    finally:
        pair.resume_replay()
        storage.close()


def test_a_recorded_crew_continues_its_history_read_on_the_standby(
    pair: Pair, urls: tuple[str, str]
) -> None:
    """The second kickoff's history is read right after the first kickoff's writes, with the
    standby's replay paused: it holds them (read on the primary after the wait)."""
    primary, standby = urls
    replica, app = named(standby)
    llm = ScriptedLLM(model="scripted", script=react_script(2))
    crew = make_crew(llm)
    with record(crew, primary, "c", continue_history=True, replicas=[replica]) as recorder:
        assert isinstance(recorder.store.backend, ReplicatedBackend)
        crew.kickoff(inputs={"user_message": "Which backend first?"})
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        assert recorder.store.get_history(conversation_id="c")[0].content == "Which backend first?"
        assert any("convostore_messages" in s for s in pair.standby.statements(app)[before:])
        pair.pause_replay()
        try:
            recorder.store.append_message(conversation_id="c", role="user", content="Noted.")
            crew.kickoff(inputs={"user_message": "And when PostgreSQL?"})
            assert "User: Noted." in llm.prompts_of(RESEARCHER)[-1]
        finally:
            pair.resume_replay()


def test_a_task_callback_opens_its_store_with_replicas(urls: tuple[str, str]) -> None:
    primary, standby = urls
    callback = TaskCallback(primary, "c", replicas=[standby])
    try:
        assert isinstance(callback.store.backend, ReplicatedBackend)
    finally:
        callback.close()


def test_replicas_go_with_a_url(urls: tuple[str, str]) -> None:
    primary, standby = urls
    with ConversationStore(primary) as store:
        for make in (
            lambda: ConvostoreMemoryStorage(store, replicas=[standby]),
            lambda: TaskCallback(store, "c", replicas=[standby]),
            lambda: record(
                make_crew(ScriptedLLM(model="s", script={})), store, "c", replicas=[standby]
            ),
        ):
            with pytest.raises(MemoryValidationError) as refused:
                make()
            assert refused.value.argument == "replicas"
        storage = ConvostoreMemoryStorage(store)
        with pytest.raises(MemoryValidationError) as refused:
            convostore_memory(storage, replicas=[standby])
        assert refused.value.argument == "replicas"
