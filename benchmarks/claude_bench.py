"""ConvostoreSessionStore against the SDK's InMemorySessionStore, printed as Markdown tables.

    .venvs/claude/bin/python benchmarks/claude_bench.py [--quick]

Every comparison runs all sides in one process, interleaved round by round, and reports the
median per operation. InMemorySessionStore is the ceiling (a dict append, no I/O). PostgreSQL
is the server at $CONVOSTORE_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test), in a
scratch schema dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
from claude_agent_sdk import (
    InMemorySessionStore,
    SessionStore,
    list_sessions_from_store,
    project_key_for_directory,
)
from convostore_claude import ConvostoreSessionStore
from report import PG, markdown_report, pg_schema

DIRECTORY = "/home/user/project"
PROJECT = project_key_for_directory(DIRECTORY)


class WithoutSummaries(ConvostoreSessionStore):
    """The same store with list_session_summaries absent: the SDK falls back to load()."""

    list_session_summaries = SessionStore.list_session_summaries  # type: ignore[assignment]


def pg_bytes(url: str) -> int:
    schema = url.rsplit("search_path%3D", 1)[1]
    with psycopg.connect(PG) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'",
            [schema],
        ).fetchone()
    return int(row[0]) if row else 0


def sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def entry(session: str, i: int) -> dict[str, Any]:
    """A transcript line of typical size (about 600 bytes)."""
    return {
        "parentUuid": None,
        "isSidechain": False,
        "cwd": "/home/user/project",
        "sessionId": session,
        "type": "assistant" if i % 2 else "user",
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-01-01T10:00:00.000Z",
        "message": {
            "role": "assistant" if i % 2 else "user",
            "content": [{"type": "text", "text": f"line {i}: " + "lorem ipsum dolor " * 20}],
        },
    }


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def row(name: str, times: dict[str, list[float]], unit: float, label: str) -> None:
    base = statistics.median(times["InMemorySessionStore"])
    for side, values in times.items():
        med = statistics.median(values)
        ratio = "1.0 (ceiling)" if side == "InMemorySessionStore" else f"{med / base:,.0f}x"
        print(f"| {name} | {side} | {med * unit:,.3f} {label} | {ratio} |")


async def bench_append_load(
    sides: dict[str, SessionStore], batches: int, load_entries: int, loads: int
) -> None:
    print("\n| operation | store | median | vs InMemorySessionStore |")
    print("|---|---|---|---|")
    times: dict[str, list[float]] = {name: [] for name in sides}
    key: Any = {"project_key": PROJECT, "session_id": "append-bench"}
    for b in range(batches):
        batch = [entry("append-bench", b * 100 + i) for i in range(100)]
        for name, store in sides.items():
            times[name].append(await timed(lambda s=store, b=batch: s.append(key, b)))  # type: ignore[misc]
    row("append (100-entry batch)", times, 1e3, "ms")

    key = {"project_key": PROJECT, "session_id": "load-bench"}
    for start in range(0, load_entries, 500):
        batch = [entry("load-bench", i) for i in range(start, start + 500)]
        for store in sides.values():
            await store.append(key, batch)
    times = {name: [] for name in sides}
    floor = "json.loads of the same lines (floor of any text store)"
    times[floor] = []
    lines = [json.dumps(e) for e in await sides["InMemorySessionStore"].load(key) or []]

    async def decode() -> None:
        [json.loads(line) for line in lines]

    for _ in range(loads):
        for name, store in sides.items():
            times[name].append(await timed(lambda s=store: s.load(key)))  # type: ignore[misc]
        times[floor].append(await timed(decode))
    row(f"load ({load_entries:,} entries)", times, 1e3, "ms")


async def bench_listing(urls: dict[str, str], sessions: int, rounds: int) -> None:
    print(f"\n| list_sessions_from_store ({sessions:,} sessions) | store | median | speed-up |")
    print("|---|---|---|---|")
    for name, url in urls.items():
        fast = ConvostoreSessionStore(url)
        slow = WithoutSummaries(store=fast.store)
        for s in range(sessions):
            sid = str(uuid.UUID(int=s))
            await fast.append(
                {"project_key": PROJECT, "session_id": sid},
                [entry(sid, 0) | {"message": {"role": "user", "content": f"prompt {s}"}}]
                + [entry(sid, i) for i in range(1, 4)],
            )
        times: dict[str, list[float]] = {"summaries": [], "load each": []}
        for _ in range(rounds):
            for label, store in (("summaries", fast), ("load each", slow)):
                times[label].append(
                    await timed(lambda s=store: list_sessions_from_store(s, DIRECTORY))
                )  # type: ignore[misc]
        infos = [(i.session_id, i.summary) for i in await list_sessions_from_store(fast, DIRECTORY)]
        slow_infos = [
            (i.session_id, i.summary) for i in await list_sessions_from_store(slow, DIRECTORY)
        ]
        assert len(infos) == sessions and sorted(infos) == sorted(slow_infos)
        fast_med = statistics.median(times["summaries"])
        slow_med = statistics.median(times["load each"])
        print(
            f"| list_session_summaries | {name} | {fast_med:,.3f} s | {slow_med / fast_med:,.1f}x |"
        )
        print(f"| fallback: list_sessions + load per session | {name} | {slow_med:,.3f} s | 1.0 |")
        fast.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    batches, load_entries, loads, sessions, rounds = (
        (5, 1_000, 3, 200, 2) if args.quick else (50, 10_000, 7, 10_000, 3)
    )
    with tempfile.TemporaryDirectory() as tmp, pg_schema() as pg_url:
        db = Path(tmp) / "bench.db"
        sqlite_store = ConvostoreSessionStore(f"sqlite:///{db}")
        pg_store = ConvostoreSessionStore(pg_url)
        sides: dict[str, SessionStore] = {
            "InMemorySessionStore": InMemorySessionStore(),
            "convostore SQLite": sqlite_store,
            "convostore PostgreSQL": pg_store,
        }
        await bench_append_load(sides, batches, load_entries, loads)
        entries = batches * 100 + load_entries
        print(f"\nBytes on disk after {entries:,} entries of about 600 bytes of JSON:")
        print(f"SQLite {sqlite_bytes(db) / entries:,.0f} B/entry;", end=" ")
        print(f"PostgreSQL {pg_bytes(pg_url) / entries:,.0f} B/entry")
        sqlite_store.close()
        pg_store.close()
    with tempfile.TemporaryDirectory() as tmp, pg_schema() as pg_url:
        urls = {"SQLite": f"sqlite:///{Path(tmp) / 'list.db'}", "PostgreSQL": pg_url}
        await bench_listing(urls, sessions, rounds)


if __name__ == "__main__":
    with markdown_report("convostore-claude benchmarks", ["convostore-claude", "claude-agent-sdk"]):
        anyio.run(main)
