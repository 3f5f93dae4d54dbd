"""Reads on a real hot standby, read-your-writes, and a standby that lags, stops or is not one.

Which server answered is read on the servers: the standby logs every statement under the
``application_name`` each test gives its connections (``Node.statements``)."""

from __future__ import annotations

import functools
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError
from convostore.backends.replicas import ReplicatedBackend
from pg_cluster import Pair, free_port

Reads = dict[str, Callable[[ConversationStore], Any]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def named(url: str, application: str) -> str:
    return f"{url}&application_name={application}"


@pytest.fixture
def app() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def store(urls: tuple[str, str], app: str) -> Iterator[ConversationStore]:
    primary, standby = urls
    with ConversationStore(primary, replicas=[named(standby, app)], max_replica_lag=0.5) as opened:
        yield opened


def routed(store: ConversationStore) -> ReplicatedBackend:
    backend = store.backend
    assert isinstance(backend, ReplicatedBackend)
    return backend


def fill(store: ConversationStore) -> tuple[str, str]:
    """A conversation with two messages and a memory store with one entry."""
    store.append_message(conversation_id="c1", role="user", content="hello there", user_id="u")
    mid = store.append_message(conversation_id="c1", role="assistant", content="hi", user_id="u")
    sid = store.create_memory_store("notes", user_id="u").memory_store_id
    store.create_memory(sid, "a.md", "remember this", user_id="u")
    return mid, sid


def test_every_read_kind_is_answered_by_the_caught_up_standby(
    pair: Pair, store: ConversationStore, app: str
) -> None:
    mid, sid = fill(store)
    pair.wait_caught_up()
    reads: Reads = {
        "get_messages": lambda s: s.get_messages(conversation_id="c1", user_id="u"),
        "get_history": lambda s: s.get_history(conversation_id="c1", user_id="u"),
        "get_message": lambda s: s.get_message(conversation_id="c1", message_id=mid),
        "get_conversation": lambda s: s.get_conversation(conversation_id="c1"),
        "list_conversations": lambda s: s.list_conversations(user_id="u").items,
        "get_changes": lambda s: s.get_changes(conversation_id="c1", after=0).items,
        "search_messages": lambda s: s.search_messages(query="hello", user_id="u").items,
        "get_memory_store": lambda s: s.get_memory_store(sid, user_id="u"),
        "list_memories": lambda s: s.list_memories(sid, user_id="u").items,
        "get_memory_by_path": lambda s: s.get_memory_by_path(sid, "a.md", user_id="u"),
        "get_contents": lambda s: s.get_contents(conversation_id="c1", user_id="u"),
        "find_conversations": lambda s: s.find_conversations(id_prefix="c", user_id="u"),
        "find_conversation_briefs": lambda s: s.find_conversation_briefs(
            id_prefix="c", user_id="u"
        ),
        "list_memory_stores": lambda s: s.list_memory_stores(user_id="u").items,
        "list_memory_versions": lambda s: s.list_memory_versions(sid, user_id="u").items,
        "search_memories": lambda s: (
            s.search_memories(memory_store_id=sid, query="remember", user_id="u").items
        ),
    }
    backend = routed(store)
    for name, read in reads.items():
        before = len(pair.standby.statements(app))
        on_primary = backend.routed["primary"]
        assert read(store), name
        assert backend.routed["primary"] == on_primary, name
        logged = pair.standby.statements(app)[before:]
        assert any("convostore_" in s for s in logged), (name, logged)
    assert store.get_history(conversation_id="c1")[-1].content == "hi"


def test_a_read_right_after_a_write_sees_it_with_replay_paused(
    pair: Pair, store: ConversationStore, app: str
) -> None:
    fill(store)
    pair.wait_caught_up()
    pair.pause_replay()
    store.append_message(conversation_id="c1", role="user", content="after the pause")
    assert store.get_history(conversation_id="c1")[-1].content == "after the pause"
    with psycopg.connect(pair.standby.url, autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_wal_replay_paused()").fetchone() == (True,)
    pair.resume_replay()
    pair.wait_caught_up()
    backend = routed(store)
    deadline = time.monotonic() + 30
    while True:  # the watcher finds it caught up within max_replica_lag
        on_replica = sum(n for k, n in backend.routed.items() if k != "primary")
        store.get_history(conversation_id="c1")
        if sum(n for k, n in backend.routed.items() if k != "primary") > on_replica:
            break
        assert time.monotonic() < deadline, "reads did not come back to the standby"
        time.sleep(0.1)


def test_two_stores_of_one_process_read_each_others_writes(
    pair: Pair, urls: tuple[str, str], app: str
) -> None:
    primary, standby = urls
    with (
        ConversationStore(primary, replicas=[named(standby, app)]) as writer,
        ConversationStore(primary, replicas=[named(standby, app)]) as reader,
    ):
        fill(writer)
        pair.wait_caught_up()
        pair.pause_replay()
        writer.append_message(conversation_id="c1", role="user", content="from the writer")
        assert reader.get_history(conversation_id="c1")[-1].content == "from the writer"
        assert reader.get_conversation(conversation_id="c1").message_count == 3  # type: ignore[union-attr]


def test_a_stopped_standby_fails_no_call_and_gets_reads_again_once_restarted(
    pair: Pair, store: ConversationStore, app: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="convostore.replicas")
    fill(store)
    pair.wait_caught_up()
    store.get_history(conversation_id="c1")
    pair.standby.stop()
    for i in range(5):
        store.append_message(conversation_id="c1", role="user", content=f"while down {i}")
        assert store.get_history(conversation_id="c1")[-1].content == f"while down {i}"
    assert any("gets no reads" in r.getMessage() for r in caplog.records)
    pair.standby.start()
    pair.wait_caught_up()
    backend = routed(store)
    deadline = time.monotonic() + 30
    before = len(pair.standby.statements(app))
    while len(pair.standby.statements(app)) == before or not any(
        "convostore_" in s for s in pair.standby.statements(app)[before:]
    ):
        assert store.get_history(conversation_id="c1")[-1].content == "while down 4"
        assert time.monotonic() < deadline, "reads did not come back to the standby"
        time.sleep(0.1)
    assert any("is back" in r.getMessage() for r in caplog.records)
    assert backend.replicas[0].healthy


def test_a_writable_server_given_as_a_replica_is_never_written_nor_read(
    urls: tuple[str, str], pg_schema_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica is never written, migrations included; one that is not a standby gets no
    reads (its answers could not be judged)."""
    caplog.set_level(logging.WARNING, logger="convostore.replicas")
    primary, _ = urls
    with ConversationStore(primary, replicas=[pg_schema_url]) as store:
        fill(store)
        assert store.get_history(conversation_id="c1")[-1].content == "hi"
        assert routed(store).routed["primary"] >= 1
        assert len(routed(store).routed) == 1
        deadline = time.monotonic() + 30  # the watcher asks it within max_replica_lag / 2
        while not any("not a standby" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "no log line said it is not a standby"
            time.sleep(0.05)
        assert not routed(store).replicas[0].healthy
    with psycopg.connect(pg_schema_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
    assert tables == (0,)


def test_the_standby_is_only_ever_read(pair: Pair, store: ConversationStore, app: str) -> None:
    fill(store)
    pair.wait_caught_up()
    store.get_messages(conversation_id="c1")
    store.list_conversations(user_id="u")
    logged = pair.standby.statements(app)
    assert logged
    assert all(s.split()[0].upper() in {"SELECT", "BEGIN", "COMMIT", "ROLLBACK"} for s in logged)


@pytest.mark.anyio
async def test_the_async_store_reads_the_standby(
    pair: Pair, urls: tuple[str, str], app: str
) -> None:
    primary, standby = urls
    store = AsyncConversationStore(primary, replicas=[named(standby, app)])
    try:
        await store.append_message(conversation_id="c1", role="user", content="async")
        pair.pause_replay()
        await store.append_message(conversation_id="c1", role="user", content="paused")
        assert [m.content for m in await store.get_history(conversation_id="c1")] == [
            "async",
            "paused",
        ]
        pair.resume_replay()
        pair.wait_caught_up()
        deadline = time.monotonic() + 30  # the watcher finds it caught up within max_replica_lag
        while True:
            before = len(pair.standby.statements(app))
            assert len(await store.get_history(conversation_id="c1")) == 2
            if len(pair.standby.statements(app)) > before:
                break
            assert time.monotonic() < deadline, "reads did not come back to the standby"
            await anyio.sleep(0.1)
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"replicas": "postgresql://h/db"}, "replicas"),
        ({"replicas": ["sqlite:///x.db"]}, "replicas"),
        ({"replicas": [42]}, "replicas"),
        ({"replicas": ["postgresql://h/db"] * 17}, "replicas"),
        ({"replicas": [], "max_replica_lag": 0}, "max_replica_lag"),
        ({"replicas": [], "max_replica_lag": float("nan")}, "max_replica_lag"),
        ({"replicas": [], "max_replica_lag": True}, "max_replica_lag"),
        ({"replicas": [], "max_replica_lag": 10**9}, "max_replica_lag"),
    ],
)
def test_bad_replica_arguments_are_refused_before_anything_opens(
    tmp_path: Any, kwargs: dict[str, Any], argument: str
) -> None:
    with pytest.raises(MemoryValidationError) as refused:
        ConversationStore("postgresql://nobody@127.0.0.1:1/none", **kwargs)
    assert refused.value.argument == argument


def test_replicas_need_a_postgresql_store(tmp_path: Any) -> None:
    with pytest.raises(MemoryValidationError, match="postgresql"):
        ConversationStore(f"sqlite:///{tmp_path / 'x.db'}", replicas=["postgresql://h/db"])
    assert not (tmp_path / "x.db").exists()


def test_a_position_handed_to_another_process_makes_its_reads_see_the_write(
    pair: Pair, urls: tuple[str, str], app: str
) -> None:
    primary, standby = urls
    # max_replica_lag=5: the standby, paused, is still read as it is (not yet found lagging)
    # when the other process has written
    with ConversationStore(primary, replicas=[named(standby, app)], max_replica_lag=5) as store:
        fill(store)
        pair.wait_caught_up()
        pair.pause_replay()
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("writer.py")), primary],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        position = done.stdout.strip()
        assert store.get_history(conversation_id="c1")[-1].content == "hi"  # not seen yet
        store.read_after(position)
        assert store.get_history(conversation_id="c1")[-1].content == "from another process"
        assert store.replica_position() == position


@pytest.mark.parametrize(
    "position", ["", "0", "0/", "/0", "G/0", "0/123456789", "0/1/2", " 0/1", "٣/1", "0/1\x00"]
)
def test_a_malformed_position_is_refused(store: ConversationStore, position: str) -> None:
    with pytest.raises(MemoryValidationError) as refused:
        store.read_after(position)
    assert refused.value.argument == "position"


def test_a_position_the_primary_has_not_reached_is_refused(store: ConversationStore) -> None:
    with pytest.raises(MemoryValidationError, match="ahead of the primary"):
        store.read_after("FFFFFFFF/FFFFFFFF")
    assert store.get_messages(conversation_id="none") == []


def test_without_replicas_there_is_no_position_to_follow(tmp_path: Any) -> None:
    with ConversationStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        assert store.replica_position() is None
        store.read_after("0/16B3748")
        with pytest.raises(MemoryValidationError):
            store.read_after("nope")


def test_a_replica_down_from_the_start_fails_no_call(
    urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens on its port: the store opens, and every call runs on the primary."""
    caplog.set_level(logging.WARNING, logger="convostore.replicas")
    primary, _ = urls
    down = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres?connect_timeout=1"
    with ConversationStore(primary, replicas=[down]) as store:
        fill(store)
        assert store.get_history(conversation_id="c1")[-1].content == "hi"
        assert store.list_conversations(user_id="u").items[0].message_count == 2
        assert routed(store).routed["primary"] >= 2
    assert any("gets no reads" in r.getMessage() for r in caplog.records)


def test_a_replica_url_may_carry_prepare_threshold(
    pair: Pair, urls: tuple[str, str], app: str
) -> None:
    """As the store's own URL may (psycopg's setting, taken out of what libpq reads)."""
    primary, standby = urls
    replica = f"{named(standby, app)}&prepare_threshold=0"
    with ConversationStore(primary, replicas=[replica]) as store:
        fill(store)
        pair.wait_caught_up()
        before = len(pair.standby.statements(app))
        assert store.get_history(conversation_id="c1")[-1].content == "hi"
        assert len(pair.standby.statements(app)) > before
    with pytest.raises(MemoryValidationError, match="prepare_threshold"):
        ConversationStore(primary, replicas=[f"{standby}&prepare_threshold=x"])


def test_on_primary_reads_the_primary_on_the_same_connections(
    pair: Pair, urls: tuple[str, str], app: str
) -> None:
    """A store's ``on_primary()`` twin (for the reads that decide a write) reads the primary
    what another writer (a store without replicas, as another process) wrote while replay is
    paused; the store itself reads the standby's older page. Without replicas, the twin is the
    store itself."""
    primary, standby = urls
    with (
        ConversationStore(primary) as writer,
        ConversationStore(primary, replicas=[named(standby, app)], max_replica_lag=30) as store,
    ):
        assert writer.on_primary() is writer
        writer.append_message(conversation_id="c1", role="user", content="one")
        pair.wait_caught_up()
        pair.pause_replay()
        writer.append_message(conversation_id="c1", role="user", content="two")
        pinned = store.on_primary()
        before = routed(store).routed["primary"]
        assert [m.content for m in pinned.get_history(conversation_id="c1")] == ["one", "two"]
        assert routed(store).routed["primary"] > before
        assert [m.content for m in store.get_history(conversation_id="c1")] == ["one"]
        assert pinned.backend.replicas is routed(store).replicas  # type: ignore[attr-defined]
        twin = AsyncConversationStore(sync=store).on_primary()
        history = anyio.run(functools.partial(twin.get_history, conversation_id="c1"))
        assert [m.content for m in history] == ["one", "two"]
