"""Several processes and threads writing one conversation: exactly what was acknowledged, in order."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from convostore import ConversationStore, Limits, MemoryQuotaExceededError

WORKER = str(Path(__file__).with_name("worker.py"))
pytestmark = pytest.mark.slow


def start(url: str, name: str, count: int, quota: int = 10_000) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, WORKER, url, name, str(count), str(quota)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def run_together(procs: list[subprocess.Popen[str]]) -> list[list[str]]:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [proc.communicate(timeout=240)[0].split() for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(procs)
    return outputs


def test_four_processes_append_1000_messages_in_one_order(shared_url: str) -> None:
    ConversationStore(shared_url).close()  # create the schema once, before the race
    procs = [start(shared_url, f"w{n}", 250) for n in range(4)]
    acked = run_together(procs)
    with ConversationStore(shared_url) as store:
        history = store.get_history(conversation_id="shared")
        meta = store.get_conversation(conversation_id="shared")
    assert meta is not None and meta.message_count == 1000
    assert len(history) == 1000
    assert sorted(m.message_id for m in history) == sorted(i for ids in acked for i in ids)
    for n, ids in enumerate(acked):
        mine = [m for m in history if m.content["writer"] == f"w{n}"]
        assert [m.message_id for m in mine] == ids  # each writer's acknowledged order holds
        assert [m.content["i"] for m in mine] == list(range(250))


def test_two_processes_racing_past_the_quota_store_exactly_the_quota(shared_url: str) -> None:
    ConversationStore(shared_url).close()
    procs = [start(shared_url, f"w{n}", 40, quota=50) for n in range(2)]
    outputs = run_together(procs)
    stored = [line for out in outputs for line in out if line != "quota"]
    refused = [line for out in outputs for line in out if line == "quota"]
    assert (len(stored), len(refused)) == (50, 30)
    with ConversationStore(shared_url) as store:
        assert len(store.get_history(conversation_id="shared")) == 50
        meta = store.get_conversation(conversation_id="shared")
        assert meta is not None and meta.message_count == 50


def test_threads_sharing_a_store_lose_nothing(backend_url: str) -> None:
    with ConversationStore(backend_url, limits=Limits(max_messages_per_conversation=150)) as store:
        refused: list[int] = []

        def writer(n: int) -> None:
            for i in range(50):
                try:
                    store.append_message(conversation_id="t", role="user", content=[n, i])
                except MemoryQuotaExceededError:
                    refused.append(n)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        history = store.get_history(conversation_id="t")
        assert len(history) == 150 and len(refused) == 50
        for n in range(4):
            mine = [m.content[1] for m in history if m.content[0] == n]
            assert mine == sorted(mine)


def test_kill_9_mid_stream_keeps_every_acknowledged_append(shared_url: str) -> None:
    ConversationStore(shared_url).close()
    proc = start(shared_url, "victim", -1)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    acked = [proc.stdout.readline().strip() for _ in range(300)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acked += [line.strip() for line in proc.stdout if line.strip()]  # acknowledged before death
    if shared_url.startswith("sqlite"):
        path = shared_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with ConversationStore(shared_url) as store:
        stored = {m.message_id for m in store.get_history(conversation_id="shared")}
        meta = store.get_conversation(conversation_id="shared")
    assert set(acked) <= stored
    assert meta is not None and meta.message_count == len(stored)
    assert len(stored) - len(acked) <= 1  # at most the one in flight, committed but unreported


def test_two_stores_racing_with_one_supplied_id_store_it_once(pg_schema_url: str) -> None:
    """Both stores append in one statement after their own writes; held back by a lock on the
    conversation, both send the same ``message_id`` at once. The ids are looked for under the
    row's lock, so the second finds the first's message: stored once, no error."""
    import psycopg

    with ConversationStore(pg_schema_url) as a, ConversationStore(pg_schema_url) as b:
        a.append_message(conversation_id="c", role="user", content="a")
        b.append_message(conversation_id="c", role="user", content="b")
        results: list[object] = []

        def append(store: ConversationStore) -> None:
            try:
                results.append(
                    store.append_message(
                        conversation_id="c", role="user", content="same", message_id="dup"
                    )
                )
            except Exception as exc:  # the test reports what either raised
                results.append(exc)

        with (
            psycopg.connect(pg_schema_url) as holder,
            psycopg.connect(pg_schema_url, autocommit=True) as watcher,
        ):
            holder.execute("SELECT 1 FROM convostore_conversations WHERE id = 'c' FOR UPDATE")
            racers = [threading.Thread(target=append, args=(s,)) for s in (a, b)]
            for t in racers:
                t.start()
            waiting = 0
            for _ in range(200):  # both statements wait for the row's lock
                (waiting,) = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%convostore_append%'"
                ).fetchone() or (0,)
                if waiting == 2:
                    break
                threading.Event().wait(0.05)
            assert waiting == 2
            holder.rollback()
        for t in racers:
            t.join()
        assert results == ["dup", "dup"]
        assert a.get_contents(conversation_id="c") == ["a", "b", "same"]
