"""Several processes on one database: graphs on different threads at once, and a thread
interrupted in one process and resumed in another. No lock errors, nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from convostore_langgraph import ConvostoreSaver
from lg_graphs import three_node_graph

WORKER = Path(__file__).with_name("lg_worker.py")


def start(url: str, thread: str, action: str, count: int = 0) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(WORKER.parent)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, thread, action, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def test_processes_run_graphs_on_different_threads_at_once(shared_url: str) -> None:
    ConvostoreSaver(shared_url).close()  # create the tables once, before the race
    procs = [start(shared_url, f"thread-{i}", "turns", 8) for i in range(3)]
    results = [finish(p) for p in procs]
    assert results == [{"turns": 8, "next": []}] * 3
    with ConvostoreSaver(shared_url) as saver:
        graph = three_node_graph().compile(checkpointer=saver)
        for i in range(3):
            state = graph.get_state({"configurable": {"thread_id": f"thread-{i}"}})
            assert len(state.values["messages"]) == 8 * 4
            assert state.values["messages"][-4].content == f"thread-{i} turn 7"


def test_a_thread_is_resumed_from_another_process(shared_url: str) -> None:
    assert finish(start(shared_url, "r", "ask")) == {"turns": 0, "next": ["act"]}
    assert finish(start(shared_url, "r", "approved")) == {"turns": 1, "next": []}
    with ConvostoreSaver(shared_url) as saver:
        graph = three_node_graph().compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "r"}})
        assert [m.content for m in state.values["messages"]][-2:] == [
            "acted (approved)",
            "reflected",
        ]
