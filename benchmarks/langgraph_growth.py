"""Where the last/first growth of the 200-turn benchmark comes from: the benchmark's thread on
ConvostoreSaver (SQLite), alone in the process, over its first and its last ``--window`` turns.
Per turn: wall time; CPU time inside the saver's calls (``time.thread_time``, summed over the
threads LangGraph runs them on); CPU time in LangGraph's ``add_messages`` (profiled).

Run: .venvs/langgraph/bin/python benchmarks/langgraph_growth.py [--turns 200]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from convostore_langgraph import ConvostoreSaver
from langchain_core.messages import HumanMessage
from langgraph_bench import State, build, payload


class TimedSaver(ConvostoreSaver):
    """Sums the CPU time its calls take, on whichever thread they run."""

    cpu = 0.0
    _lock = threading.Lock()

    def _timed(self, name: str, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return getattr(super(), name)(*args, **kwargs)
        finally:
            with self._lock:
                self.cpu += time.thread_time() - start

    def put(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("put", *args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("put_writes", *args, **kwargs)

    def get_tuple(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("get_tuple", *args, **kwargs)


def add_messages_ms(prof: cProfile.Profile) -> float:
    stats: Any = pstats.Stats(prof).stats  # {(file, line, name): (cc, nc, tottime, ...)}
    return sum(v[2] for k, v in stats.items() if k[0].endswith("graph/message.py")) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=20)
    args = parser.parse_args()
    wall: list[float] = []
    cpu: list[float] = []
    merge: list[float] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        TimedSaver(f"sqlite:///{Path(tmp) / 'growth.db'}") as saver,
    ):
        graph = build(State).compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "growth"}}
        for i in range(args.turns):
            message = HumanMessage(f"turn {i}: {payload()}")
            saver.cpu = 0.0
            prof = cProfile.Profile()
            start = time.perf_counter()
            prof.enable()
            graph.invoke({"messages": [message], "turns": 0}, cfg)
            prof.disable()
            wall.append(time.perf_counter() - start)
            cpu.append(saver.cpu)
            merge.append(add_messages_ms(prof) / 1e3)
    w = args.window
    print(f"ms per turn (medians), turns 0-{w} against {args.turns - w}-{args.turns}")
    for label, series in [
        ("wall time (profiled)", wall),
        ("CPU in the saver's calls", cpu),
        ("CPU in add_messages", merge),
    ]:
        first, last = statistics.median(series[:w]) * 1e3, statistics.median(series[-w:]) * 1e3
        print(f"{label:<28}{first:>8.2f}{last:>8.2f}{last - first:>+8.2f}")


if __name__ == "__main__":
    main()
