"""Several processes appending to one session: no entry lost, batches whole, summary consistent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import fold_session_summary
from convostore_claude import ConvostoreSessionStore

WORKER = str(Path(__file__).with_name("claude_worker.py"))
pytestmark = pytest.mark.anyio
WRITERS, BATCHES = 3, 20


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_concurrent_appends_from_processes(shared_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, shared_url, f"w{n}", str(BATCHES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(WRITERS)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "done"
            assert p.wait(timeout=120) == 0
    finally:
        for p in procs:
            p.kill()
            p.wait()

    key: Any = {"project_key": "proj", "session_id": "shared"}
    store = ConvostoreSessionStore(shared_url)
    try:
        loaded = await store.load(key)
        assert loaded is not None
        [summary] = await store.list_session_summaries("proj")
        [listed] = await store.list_sessions("proj")
    finally:
        store.close()
    # every entry once ("common" only the first time), each batch contiguous and in order
    assert loaded[0] == {"type": "user", "uuid": "common", "n": 0}
    body = loaded[1:]
    assert len(body) == WRITERS * BATCHES * 6
    for start in range(0, len(body), 6):
        chunk = body[start : start + 6]
        name, i = chunk[0]["uuid"].split("-")[:2]
        assert [c.get("uuid") for c in chunk[:5]] == [f"{name}-{i}-{j}" for j in range(5)]
        assert chunk[5]["lastPrompt"] == f"{name} {i}"
    # the summary is the fold of the stored entries in their stored order: no lost update
    expected = fold_session_summary(None, key, loaded)["data"]
    assert summary["data"] == expected
    assert summary["mtime"] == listed["mtime"]
