"""Several processes and threads writing one memory store: one winner per version, no version
number reused, nothing lost, and counters that equal a recount."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from convostore import ConversationStore, MemoryVersionConflictError

WORKER = str(Path(__file__).with_name("memory_worker.py"))
pytestmark = pytest.mark.slow


def start(*args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, WORKER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def recount(store: ConversationStore, sid: str) -> tuple[int, int]:
    """The number of live entries and the bytes of their contents, read entry by entry."""
    count = size = 0
    cursor = None
    while True:
        page = store.list_memories(sid, limit=100, after=cursor)
        for item in page.items:
            entry = store.get_memory(sid, item.entry_id)
            assert entry is not None and entry.content is not None
            count += 1
            size += len(entry.content.encode())
        cursor = page.next_cursor
        if cursor is None:
            return count, size


def test_two_processes_updating_from_one_version_have_one_winner(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        sid = store.create_memory_store("race").memory_store_id
        eid = store.create_memory(sid, "shared.md", "start").entry_id
        procs = [start("race", shared_url, sid, eid, name) for name in ("p0", "p1")]
        try:
            for version in range(1, 31):
                for proc in procs:
                    assert proc.stdin is not None
                    proc.stdin.write(f"{version}\n")
                    proc.stdin.flush()
                answers = sorted(proc.stdout.readline().split() for proc in procs if proc.stdout)
                # exactly one wins; the other learns the winner's version
                assert answers == [["conflict", str(version + 1)], ["ok", str(version + 1)]]
        finally:
            for proc in procs:
                proc.communicate(timeout=60)
        history = store.list_memory_versions(sid, entry_id=eid, limit=100).items
        assert [v.version for v in history] == list(range(1, 32))  # none lost, none reused
        entry = store.get_memory(sid, eid)
        assert entry is not None and entry.version == 31
        last = store.get_memory_version(sid, history[-1].version_id)
        assert last is not None and last.content == entry.content


def test_threads_retrying_on_conflict_lose_no_update(backend_url: str) -> None:
    with ConversationStore(backend_url) as store:
        sid = store.create_memory_store("counter").memory_store_id
        eid = store.create_memory(sid, "n", "0").entry_id

        def bump(times: int) -> None:
            done = 0
            while done < times:
                entry = store.get_memory(sid, eid)
                assert entry is not None and entry.content is not None
                try:
                    store.update_memory(sid, eid, str(int(entry.content) + 1), entry.version)
                except MemoryVersionConflictError:
                    continue
                done += 1

        threads = [threading.Thread(target=bump, args=(25,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        entry = store.get_memory(sid, eid)
        assert entry is not None and (entry.content, entry.version) == ("100", 101)


def test_counters_equal_a_recount_under_concurrent_writers(shared_url: str) -> None:
    with ConversationStore(shared_url) as store:
        sid = store.create_memory_store("churn").memory_store_id
        procs = [start("churn", shared_url, sid, f"p{n}", "40") for n in range(3)]
        errors: list[BaseException] = []

        def churn_here(name: str) -> None:
            try:
                for i in range(40):
                    entry = store.create_memory(sid, f"{name}/{i}", "t" * i)
                    store.update_memory(sid, entry.entry_id, "u", 1)
                    if i % 2:
                        store.delete_memory(sid, entry.entry_id)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=churn_here, args=(f"t{n}",)) for n in range(2)]
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outputs = [proc.communicate(timeout=240)[0].split() for proc in procs]
        assert errors == [] and outputs == [["done"]] * 3
        meta = store.get_memory_store(sid)
        assert meta is not None
        assert (meta.entry_count, meta.total_size) == recount(store, sid)
        # 3 processes x (40 - 14 deleted) + 2 threads x 20 kept
        assert meta.entry_count == 3 * 26 + 2 * 20
        versions = store.list_memory_versions(sid, limit=100)
        seen = len(versions.items)
        while versions.next_cursor is not None:
            versions = store.list_memory_versions(sid, limit=100, after=versions.next_cursor)
            seen += len(versions.items)
        assert seen == 3 * (40 * 2 + 14 + 13) + 2 * (40 * 2 + 20)
