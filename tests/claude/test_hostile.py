"""Hostile input, ordering and erasure at the session store's entry points, on every backend:
keys with NUL, lone surrogates or 1 MiB; huge integers; entries nested deeper than JSON goes;
another user's sessions; mtimes that must follow the order of writes; deletes racing appends;
deleted transcripts left in the database file."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from convostore import ConversationStore, MemoryValidationError
from convostore_claude import ConvostoreSessionStore

pytestmark = pytest.mark.anyio
FROZEN = 1_700_000_000_000


def _key(session: str = "s", project: str = "proj", **extra: Any) -> Any:
    return {"project_key": project, "session_id": session, **extra}


def _entry(text: str = "hi", **extra: Any) -> Any:
    return {"type": "user", "uuid": str(uuid.uuid4()), "message": {"content": text}, **extra}


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("project_key", "a\x00b", "must not contain NUL"),
        ("session_id", "\ud800", "lone surrogate"),
        ("project_key", "p" * (1 << 20), "must be 1 to 1024 bytes"),
        ("subpath", "x\x00", "must not contain NUL"),
    ],
)
async def test_bad_keys_are_refused_everywhere(
    session_store: ConvostoreSessionStore, field: str, value: str, message: str
) -> None:
    await session_store.append(_key(), [_entry()])
    key = {**_key(), field: value}
    for call in (
        lambda: session_store.append(key, [_entry()]),
        lambda: session_store.load(key),
        lambda: session_store.delete(key),
    ):
        with pytest.raises(MemoryValidationError, match=message):
            await call()
    assert await session_store.load(_key()) is not None


@pytest.mark.parametrize("value", [2**63, -(2**70), True, "1"])
async def test_huge_or_wrong_integers_are_refused(
    session_store: ConvostoreSessionStore, conversation_store: ConversationStore, value: Any
) -> None:
    with pytest.raises(MemoryValidationError, match="older_than_ms"):
        await session_store.prune("proj", older_than_ms=value)
    with pytest.raises(MemoryValidationError, match="max_entries"):
        ConvostoreSessionStore(store=conversation_store, max_entries=value)


async def test_entries_nested_too_deeply_are_refused(session_store: ConvostoreSessionStore) -> None:
    with pytest.raises(MemoryValidationError, match=r"entries\[1\]: nested deeper than 900"):
        await session_store.append(_key(), [_entry(), {"type": "user", "deep": _deep(10_000)}])
    assert await session_store.load(_key()) is None


async def test_another_users_sessions_are_out_of_reach(
    conversation_store: ConversationStore,
) -> None:
    alice = ConvostoreSessionStore(store=conversation_store, user_id="alice")
    mallory = ConvostoreSessionStore(store=conversation_store, user_id="mallory")
    await alice.append(_key(), [_entry("alice's secret")])
    assert await mallory.load(_key()) is None
    assert await mallory.list_sessions("proj") == []
    await mallory.delete(_key())
    assert await alice.load(_key()) is not None


async def test_mtime_follows_the_order_of_writes_even_within_a_millisecond(
    backend_url: str,
) -> None:
    """Appends in one millisecond (a frozen clock here) still get strictly increasing mtimes,
    so the newest session is the one written last."""
    with ConversationStore(backend_url, clock=lambda: FROZEN) as core:
        store = ConvostoreSessionStore(store=core)
        for session in ("a", "b", "c", "a"):
            await store.append(_key(session), [_entry(session)])
        listed = {s["session_id"]: s["mtime"] for s in await store.list_sessions("proj")}
        assert listed == {"b": FROZEN + 1, "c": FROZEN + 2, "a": FROZEN + 3}
        summaries = {
            s["session_id"]: s["mtime"] for s in await store.list_session_summaries("proj")
        }
        assert summaries == listed


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mtimes_from_several_writers_never_tie(shared_url: str) -> None:
    """Writers on their own connections (as separate processes are), appending to their own
    sessions at once: every append gets an mtime of its own."""
    per_writer, writers = 15, 3

    def write(n: int) -> None:
        import anyio

        async def run() -> None:
            async with ConvostoreSessionStore(shared_url) as store:
                for i in range(per_writer):
                    await store.append(_key(f"w{n}-{i}"), [_entry()])

        anyio.run(run)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    async with ConvostoreSessionStore(shared_url) as store:
        mtimes = [s["mtime"] for s in await store.list_sessions("proj")]
    assert len(mtimes) == per_writer * writers == len(set(mtimes))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_deleting_a_session_while_its_subagents_append_leaves_no_orphans(
    shared_url: str,
) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []

    def append(sub: str) -> None:
        import anyio

        async def run() -> None:
            async with ConvostoreSessionStore(shared_url) as store:
                while not stop.is_set():
                    await store.append(_key(subpath=sub), [_entry()])

        try:
            anyio.run(run)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writers = [threading.Thread(target=append, args=(f"subagents/agent-{n}",)) for n in range(3)]
    for w in writers:
        w.start()
    async with ConvostoreSessionStore(shared_url) as store:
        try:
            for _ in range(30):
                await store.delete(_key())
        finally:
            stop.set()
            for w in writers:
                w.join()
        assert errors == []
        orphans = store.store.backend.read(
            lambda tx: tx.execute(
                "SELECT count(*) FROM convostore_messages m WHERE NOT EXISTS"
                " (SELECT 1 FROM convostore_conversations c WHERE c.id = m.conversation_id)"
            )
        )
        assert orphans == [(0,)]


def _copies(path: Path, marker: str) -> int:
    return sum(f.read_bytes().count(marker.encode()) for f in path.parent.glob(path.name + "*"))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_deleted_session_leaves_no_copy_in_the_files(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    marker = uuid.uuid4().hex
    with ConversationStore(f"sqlite:///{db}"):  # another connection keeps the WAL alive
        async with ConvostoreSessionStore(f"sqlite:///{db}") as store:
            await store.append(_key(), [_entry(f"my code is {marker}")])
            await store.append(_key(subpath="subagents/agent-1"), [_entry(f"again {marker}")])
            await store.append(_key("kept"), [_entry("kept")])
            assert _copies(db, marker)
            await store.delete(_key())
            assert _copies(db, marker) == 0
            assert await store.load(_key("kept")) is not None
