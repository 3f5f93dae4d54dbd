"""Eight writers and readers at once, threads and processes, with the standby's replay paused
and resumed on purpose: nothing is lost and no writer reads a state older than its writes."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from convostore import ConversationStore
from convostore.backends.replicas import ReplicatedBackend
from pg_cluster import Pair
from replica_worker import write_and_read

WORKER = str(Path(__file__).with_name("replica_worker.py"))
COUNT = 40


@contextmanager
def lagging(pair: Pair) -> Iterator[None]:
    """The standby's replay paused and resumed every 30 ms while the block runs."""
    stop = threading.Event()

    def toggle() -> None:
        while not stop.wait(0.03):
            pair.pause_replay()
            if stop.wait(0.03):
                break
            pair.resume_replay()

    thread = threading.Thread(target=toggle)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        pair.resume_replay()


def test_eight_threads_read_their_own_writes_with_the_standby_lagging(
    pair: Pair, urls: tuple[str, str]
) -> None:
    primary, standby = urls
    with ConversationStore(primary, replicas=[standby], max_replica_lag=0.5) as store:
        with lagging(pair), ThreadPoolExecutor(8) as pool:
            stale = list(pool.map(lambda i: write_and_read(store, f"t{i}", COUNT), range(8)))
        assert stale == [0] * 8
        backend = store.backend
        assert isinstance(backend, ReplicatedBackend)
        assert sum(n for k, n in backend.routed.items() if k != "primary") > 0
        for i in range(8):  # nothing lost
            got = [m.content for m in store.get_history(conversation_id=f"t{i}")]
            assert got == [str(n) for n in range(COUNT)]


def test_eight_processes_read_their_own_writes_with_the_standby_lagging(
    pair: Pair, urls: tuple[str, str]
) -> None:
    primary, standby = urls
    with lagging(pair):
        workers = [
            subprocess.Popen(
                [sys.executable, WORKER, primary, standby, f"p{i}", str(COUNT)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(8)
        ]
        outputs = [w.communicate(timeout=240)[0].split() for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert [int(stale) for stale, _ in outputs] == [0] * 8
    assert sum(int(on_standby) for _, on_standby in outputs) > 0
    with ConversationStore(primary) as store:
        for i in range(8):
            got = [m.content for m in store.get_history(conversation_id=f"p{i}")]
            assert got == [str(n) for n in range(COUNT)]
