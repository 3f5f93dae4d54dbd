"""convostore-crewai against CrewAI's own stores, side by side in one run.

    .venvs/crewai/bin/python benchmarks/crewai_bench.py [--quick]

1. Recording task outputs: CrewAI's own ``KickoffTaskOutputsSQLiteStorage`` (the
   ``latest_kickoff_task_outputs.db`` every crew writes), convostore's ``append_message`` on
   SQLite (what ``record`` and ``TaskCallback`` do per task), and a raw sqlite3 insert as the
   floor.
2. A whole offline crew run (two agents, two tasks, scripted model) with and without ``record``.
3. ``crewai.Memory`` storage: CrewAI's default ``LanceDBStorage`` against
   ``ConvostoreMemoryStorage`` (SQLite), both fed the same ``keyword_embedder`` vectors:
   saving records one by one, searching, and bytes on disk.

Rounds alternate between the sides so machine noise hits both. Times are medians per
operation over the rounds.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

_TMP = tempfile.mkdtemp(prefix="crewai-bench-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "CREWAI_TESTING": "true",
        "CREWAI_STORAGE_DIR": "crewai-bench",
        "XDG_DATA_HOME": _TMP,
    }
)
warnings.filterwarnings("ignore")

import logging  # noqa: E402

from convostore import ConversationStore  # noqa: E402
from convostore_crewai import ConvostoreMemoryStorage, keyword_embedder, record  # noqa: E402
from crewai import Agent, BaseLLM, Crew, Task  # noqa: E402
from crewai.memory.storage.kickoff_task_outputs_storage import (  # noqa: E402
    KickoffTaskOutputsSQLiteStorage,
)
from crewai.memory.storage.lancedb_storage import LanceDBStorage  # noqa: E402
from crewai.memory.types import MemoryRecord  # noqa: E402
from report import markdown_report  # noqa: E402

logging.disable(logging.WARNING)
QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 5
APPENDS = 100 if QUICK else 400  # task outputs per round and side
KICKOFFS = 2 if QUICK else 6  # crew runs per round and side
RECORDS = 100 if QUICK else 300  # memory records per round and side
SEARCHES = 50 if QUICK else 100  # searches per round and side

WORDS = [
    "postgres",
    "sqlite",
    "billing",
    "invoice",
    "crew",
    "agent",
    "task",
    "memory",
    "search",
    "keyword",
    "vector",
    "lance",
    "disk",
    "cache",
    "latency",
    "throughput",
    "replica",
    "backup",
    "schema",
    "index",
    "query",
    "session",
    "user",
    "order",
    "payment",
    "refund",
    "ledger",
    "audit",
    "report",
    "summary",
    "weekly",
    "monthly",
    "region",
    "europe",
    "asia",
    "america",
]


def text(i: int) -> str:
    """A deterministic sentence of 12 words."""
    return " ".join(WORDS[(i * 7 + k * 13) % len(WORDS)] for k in range(12))


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(fn: Callable[[], object], count: int) -> float:
    """Seconds per operation of ``fn`` run once for ``count`` operations."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / count


def ratio(value: float, base: float) -> str:
    r = value / base
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.3f}x"


def row(name: str, seconds: list[float], base: float, unit: str = "us") -> str:
    scale = 1e6 if unit == "us" else 1e3
    value = statistics.median(seconds)
    return f"| {name} | {value * scale:,.1f} {unit} | {ratio(value, base)} |"


# -- 1. task outputs ----------------------------------------------------------------------


def bench_task_outputs() -> list[str]:
    root = Path(_TMP) / "outputs"
    root.mkdir()
    crewai_db = KickoffTaskOutputsSQLiteStorage(str(root / "crewai.db"))
    ours = ConversationStore(f"sqlite:///{root / 'convostore.db'}")
    raw = sqlite3.connect(root / "raw.db", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    raw.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, conversation TEXT, content TEXT)")
    tasks = [Task(description=f"task {i}", expected_output="x") for i in range(APPENDS * ROUNDS)]
    times: dict[str, list[float]] = {"crewai": [], "ours": [], "raw": []}
    for r in range(ROUNDS):
        batch = range(r * APPENDS, (r + 1) * APPENDS)

        def crewai_side(batch: range = batch) -> None:
            for i in batch:
                crewai_db.add(tasks[i], {"raw": text(i), "agent": "Researcher"}, i)

        def ours_side(batch: range = batch) -> None:
            for i in batch:
                ours.append_message(
                    conversation_id="bench",
                    role="assistant",
                    content=text(i),
                    metadata={"crewai": "task_output", "agent": "Researcher", "task": "t"},
                )

        def raw_side(batch: range = batch) -> None:
            for i in batch:
                raw.execute("BEGIN IMMEDIATE")
                raw.execute("INSERT INTO t (conversation, content) VALUES (?, ?)", ("b", text(i)))
                raw.execute("COMMIT")

        for name, fn in (("crewai", crewai_side), ("ours", ours_side), ("raw", raw_side)):
            times[name].append(timed(fn, APPENDS))
    ours.close()
    raw.close()
    base = statistics.median(times["crewai"])
    n = APPENDS * ROUNDS
    return [
        f"Task outputs written one by one ({n} per side; median of {ROUNDS} rounds):",
        "",
        "| store | time per write | vs CrewAI's own |",
        "|---|---|---|",
        row("CrewAI `KickoffTaskOutputsSQLiteStorage.add`", times["crewai"], base),
        row("convostore `append_message` (SQLite)", times["ours"], base),
        row("raw sqlite3 insert, one transaction each (floor)", times["raw"], base),
        "",
        f"Bytes on disk after {n} writes: CrewAI {size_of(root / 'crewai.db'):,},"
        f" convostore {size_of(root / 'convostore.db'):,} (WAL checkpointed on close),"
        f" raw {size_of(root / 'raw.db'):,}.",
        "CrewAI's table keeps one row per task id (the latest run only); convostore keeps"
        " every run's output in order.",
    ]


# -- 2. whole crew runs -------------------------------------------------------------------


class Scripted(BaseLLM):
    def supports_function_calling(self) -> bool:
        return False

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        return "Thought: done\nFinal Answer: an answer of a few words"


def make_crew() -> Crew:
    llm = Scripted(model="scripted")
    agents = [
        Agent(role=role, goal="g", backstory="b", llm=llm, max_retry_limit=0)
        for role in ("Researcher", "Writer")
    ]
    tasks = [
        Task(description=f"{name}: {{user_message}}", expected_output="x", agent=agent)
        for name, agent in zip(("research", "write"), agents, strict=True)
    ]
    return Crew(agents=agents, tasks=tasks)


def bench_crew_runs() -> list[str]:
    root = Path(_TMP) / "runs"
    root.mkdir()
    store = ConversationStore(f"sqlite:///{root / 'runs.db'}")
    plain, recorded = make_crew(), make_crew()
    record(recorded, store, "bench-run", tools=True)
    times: dict[str, list[float]] = {"plain": [], "recorded": []}
    inputs = {"user_message": "which database?"}
    for _ in range(ROUNDS * KICKOFFS):  # one kickoff of each, alternating
        times["plain"].append(timed(lambda: plain.kickoff(inputs=inputs), 1))
        times["recorded"].append(timed(lambda: recorded.kickoff(inputs=inputs), 1))
    stored = len(store.get_history(conversation_id="bench-run"))
    store.close()
    base = statistics.median(times["plain"])
    return [
        f"A whole offline crew run, two agents and two tasks ({KICKOFFS * ROUNDS} per side,"
        " alternating; median):",
        "",
        "| run | time per kickoff | vs not recorded |",
        "|---|---|---|",
        row("`crew.kickoff` without recording", times["plain"], base, "ms"),
        row(
            "`crew.kickoff` with `record(..., tools=True)` (SQLite)", times["recorded"], base, "ms"
        ),
        "",
        f"({stored} messages recorded, three per run; each run's status goes to conversation metadata.)",
    ]


# -- 3. memory storage --------------------------------------------------------------------


def bench_memory() -> list[str]:
    root = Path(_TMP) / "memory"
    lance = LanceDBStorage(
        path=str(root / "lancedb")
    )  # CrewAI's defaults: compacts every 100 saves
    ours = ConvostoreMemoryStorage(f"sqlite:///{root / 'convostore.db'}")
    total = RECORDS * ROUNDS
    contents = [text(i) for i in range(total)]
    vectors = keyword_embedder(contents)
    queries = [" ".join(WORDS[(q * 5 + k) % len(WORDS)] for k in range(3)) for q in range(SEARCHES)]
    query_vectors = keyword_embedder(queries)
    save: dict[str, list[float]] = {"lance": [], "ours": []}
    search: dict[str, list[float]] = {"lance": [], "ours": []}
    sides: dict[str, Any] = {"lance": lance, "ours": ours}
    for r in range(ROUNDS):
        batch = range(r * RECORDS, (r + 1) * RECORDS)
        for name, storage in sides.items():

            def saving(storage: Any = storage, batch: range = batch) -> None:
                for i in batch:
                    storage.save(
                        [
                            MemoryRecord(
                                content=contents[i],
                                scope="/crew/bench",
                                categories=["bench"],
                                embedding=vectors[i],
                            )
                        ]
                    )

            def searching(storage: Any = storage) -> None:
                for v in query_vectors:
                    storage.search(v, scope_prefix="/crew", limit=5)

            save[name].append(timed(saving, RECORDS))
            search[name].append(timed(searching, SEARCHES))
    ours.close()
    save_base, search_base = statistics.median(save["lance"]), statistics.median(search["lance"])
    return [
        f"`crewai.Memory` storage, {total} records saved one by one as `remember` does,"
        f" {SEARCHES} three-word searches per round (median of {ROUNDS} rounds):",
        "",
        "| storage | save one record | vs LanceDB | search (limit 5) | vs LanceDB |",
        "|---|---|---|---|---|",
        f"| CrewAI `LanceDBStorage` (default) | {statistics.median(save['lance']) * 1e3:,.2f} ms"
        f" | 1.00x | {search_base * 1e3:,.2f} ms | 1.00x |",
        f"| `ConvostoreMemoryStorage` (SQLite) | {statistics.median(save['ours']) * 1e3:,.2f} ms"
        f" | {ratio(statistics.median(save['ours']), save_base)}"
        f" | {statistics.median(search['ours']) * 1e3:,.2f} ms"
        f" | {ratio(statistics.median(search['ours']), search_base)} |",
        "",
        f"Bytes on disk for {total} records: LanceDB {size_of(root / 'lancedb'):,}"
        f" ({len(vectors[0])}-float vectors; compacted every 100 saves, old versions kept),"
        f" convostore {size_of(root / 'convostore.db'):,} (text, keyword index).",
    ]


def main() -> None:
    print(f"crewai-bench ({'quick' if QUICK else 'full'}), Python {sys.version.split()[0]}\n")
    for part in (bench_task_outputs, bench_crew_runs, bench_memory):
        print("\n".join(part()))
        print()


if __name__ == "__main__":
    with markdown_report(
        "convostore-crewai benchmarks", ["convostore-crewai", "crewai", "lancedb"]
    ):
        main()
