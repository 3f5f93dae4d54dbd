"""ConvostoreSession against the Agents SDK's own sessions, side by side in one run.

    .venvs/openai/bin/python benchmarks/openai_bench.py [--reps 7]

SQLite: ``agents.SQLiteSession`` on a file against ``ConvostoreSession`` on a file.
PostgreSQL (when reachable at $CONVOSTORE_TEST_PG, default postgresql://postgres@127.0.0.1:5432/test):
``SQLAlchemySession`` (asyncpg) against ``ConvostoreSession`` (psycopg), each in a fresh schema.

Workloads: ``add`` = 100 x ``add_items(10 items)`` into an empty session; ``fill`` = 100 x
``add_items(100 items)`` into an empty session (10,000 items); ``get all`` =
``get_items()`` of a 10,000-item session; ``get 20`` = ``get_items(limit=20)`` of the same
(per call, averaged over 100 calls per sample).
Writers (PostgreSQL): 1, 2, 4 and 8 processes, each appending ``add_items`` of one item
``WRITES`` times to its own session, started together; items per second, both sides
alternating per writer count.
The two sides alternate repetition by repetition so machine noise hits both; the garbage
collector is off inside timed sections. Cells are median (min) in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agents import SQLiteSession
from convostore_openai import ConvostoreSession
from report import markdown_report

PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def items(count: int, start: int = 0) -> list[dict[str, Any]]:
    """A realistic rotation: user message, function call, its output, assistant message."""
    out: list[dict[str, Any]] = []
    for n in range(start, start + count):
        kind = n % 4
        if kind == 0:
            out.append({"role": "user", "content": f"What's the weather in city {n}?"})
        elif kind == 1:
            out.append(
                {
                    "arguments": '{"city": "Paris"}',
                    "call_id": f"call_{n}",
                    "id": f"fc_{n}",
                    "name": "get_weather",
                    "type": "function_call",
                }
            )
        elif kind == 2:
            out.append(
                {"call_id": f"call_{n - 1}", "output": "Sunny, 22C", "type": "function_call_output"}
            )
        else:
            out.append(
                {
                    "content": [{"annotations": [], "text": "It is sunny.", "type": "output_text"}],
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "type": "message",
                }
            )
    return out


BATCHES = [items(10, 10 * b) for b in range(100)]
FILL = [items(100, 100 * b) for b in range(100)]
# A 20-item read takes tens of microseconds: one sample is the mean of this many calls, so
# the garbage collection before each sample does not dominate it.
GET_20_CALLS = 100


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        await fn()
        return (time.perf_counter() - start) * 1000
    finally:
        gc.enable()


async def add_run(session: Any) -> None:
    for batch in BATCHES:
        await session.add_items(batch)


async def fill_run(session: Any) -> None:
    for batch in FILL:
        await session.add_items(batch)


async def get_20_run(session: Any) -> None:
    for _ in range(GET_20_CALLS):
        await session.get_items(limit=20)


def cell(samples: list[float]) -> str:
    return f"{statistics.median(samples):.3g} ({min(samples):.3g})"


class Side:
    """One store under test: makes sessions, and says how big its files are."""

    def __init__(self, name: str, make: Callable[[str], Any], close: Callable[[Any], Any]) -> None:
        self.name = name
        self.make = make
        self.close = close
        self.add: list[float] = []
        self.fill: list[float] = []
        self.get_all: list[float] = []
        self.get_20: list[float] = []
        self.bytes: int | None = None
        self.breakdown: dict[str, tuple[int, int, int]] = {}


async def maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value


async def bench_pair(sides: list[Side], reps: int) -> None:
    for rep in range(reps):
        for side in sides[rep % len(sides) :] + sides[: rep % len(sides)]:
            session = side.make(f"add-{rep}-{uuid.uuid4().hex[:6]}")
            side.add.append(await timed(lambda s=session: add_run(s)))
            assert len(await session.get_items()) == 1000
            await maybe_await(side.close(session))
            session = side.make(f"fill-{rep}-{uuid.uuid4().hex[:6]}")
            side.fill.append(await timed(lambda s=session: fill_run(s)))
            assert len(await session.get_items(limit=20)) == 20
            await maybe_await(side.close(session))
    big = []
    for side in sides:
        session = side.make("big")
        for batch in FILL:
            await session.add_items(batch)
        big.append(session)
    expected = [item for batch in FILL for item in batch]
    for session in big:
        assert await session.get_items() == expected
        assert await session.get_items(limit=20) == expected[-20:]
    for rep in range(2 * reps + 1):
        pairs = list(zip(sides, big, strict=True))
        for side, session in pairs[rep % len(pairs) :] + pairs[: rep % len(pairs)]:
            side.get_all.append(await timed(session.get_items))
            side.get_20.append(await timed(lambda s=session: get_20_run(s)) / GET_20_CALLS)
    for side, session in zip(sides, big, strict=True):
        await maybe_await(side.close(session))


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def where_bytes_go(path: Path) -> dict[str, tuple[int, int, int]]:
    """Each table and index of the SQLite file ``path`` (SQLite's dbstat): its bytes on disk
    (pages), the bytes of its rows (payload) and its pages' unused bytes."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT name, sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name"
        ).fetchall()
    return {name: (size, payload, unused) for name, size, payload, unused in rows}


def print_breakdown(sides: list[Side]) -> None:
    """Where each side's bytes go: every table or index of more than one page, the others
    summed (an empty table or index still takes its page)."""
    found = [s.breakdown for s in sides]
    names = sorted({n for b in found for n, v in b.items() if v[0] > PAGE})
    names.sort(key=lambda n: -max(b.get(n, (0, 0, 0))[0] for b in found))
    print("\nWhere the bytes of the 10,000 items go (SQLite's dbstat): bytes (row payload, unused)")
    print("| table or index | " + " | ".join(s.name for s in sides) + " |")
    print("|---|" + "---|" * len(sides))

    def fmt(v: tuple[int, int, int] | None) -> str:
        return "" if v is None else f"{v[0]:,} ({v[1]:,}, {v[2]:,})"

    for name in names:
        print(f"| {name} | " + " | ".join(fmt(b.get(name)) for b in found) + " |")
    rest = []
    for b in found:
        small = [v for n, v in b.items() if n not in names]
        rest.append(f"{sum(v[0] for v in small):,} ({len(small)} of one page)")
    print("| every other table and index | " + " | ".join(rest) + " |")
    print("| file | " + " | ".join(f"{s.bytes:,}" for s in sides) + " |")


PAGE = 4096


def print_table(title: str, anchor: Side, *others: Side) -> None:
    print(f"\n{title}")
    head = " | ".join(f"{o.name} ms | ratio" for o in others)
    print(f"| workload | {anchor.name} ms | {head} |")
    print("|---|---|" + "---|---|" * len(others))
    for label, attr in (
        ("100 x add_items(10)", "add"),
        ("10,000 items 100 at a time (100 x add_items(100))", "fill"),
        ("get_items() of 10,000", "get_all"),
        ("get_items(limit=20) of 10,000", "get_20"),
    ):
        a = getattr(anchor, attr)
        cells = [
            f"{cell(getattr(o, attr))} | {statistics.median(getattr(o, attr)) / statistics.median(a):.2f}x"
            for o in others
        ]
        print(f"| {label} | {cell(a)} | {' | '.join(cells)} |")
    if anchor.bytes is not None and all(o.bytes is not None for o in others):
        cells = [f"{o.bytes:,} | {o.bytes / anchor.bytes:.2f}x" for o in others]  # type: ignore[operator]
        print(f"| bytes on disk, 10,000 items | {anchor.bytes:,} | {' | '.join(cells)} |")


async def sqlite_pair(reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        anchor = Side(
            "SQLiteSession",
            lambda sid: SQLiteSession(sid, root / f"agents-{sid}.db"),
            lambda s: s.close(),
        )
        ours = Side(
            "ConvostoreSession",
            lambda sid: ConvostoreSession(sid, url=f"sqlite:///{root / f'convo-{sid}.db'}"),
            lambda s: s.aclose(),
        )
        # SQLiteSession runs SQLite's default synchronous=FULL (an fsync per commit); convostore
        # defaults to NORMAL in WAL mode. The third side pays the same fsync as the anchor.
        full = Side(
            "ConvostoreSession FULL",
            lambda sid: ConvostoreSession(
                sid, url=f"sqlite:///{root / f'full-{sid}.db'}?synchronous=FULL"
            ),
            lambda s: s.aclose(),
        )
        await bench_pair([anchor, ours, full], reps)
        anchor.bytes = file_bytes(root / "agents-big.db")
        ours.bytes = file_bytes(root / "convo-big.db")
        full.bytes = file_bytes(root / "full-big.db")
        anchor.breakdown = where_bytes_go(root / "agents-big.db")
        ours.breakdown = where_bytes_go(root / "convo-big.db")
        print_table("SQLite file (WAL)", anchor, ours, full)
        print_breakdown([anchor, ours])


def pg_unreachable() -> str | None:
    """Why the PostgreSQL part cannot run (its packages or the server missing), or None."""
    try:
        import asyncpg  # noqa: F401 - SQLAlchemySession's driver
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # not installed or not reachable: say so and skip
        return str(exc)
    return None


@contextmanager
def fresh_schemas(n: int) -> Iterator[list[str]]:
    """``n`` new schemas on ``PG_URL``, dropped afterwards."""
    import psycopg

    schemas = [f"bench_{uuid.uuid4().hex[:10]}" for _ in range(n)]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schemas
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


def sqlalchemy_engine(schema: str) -> Any:
    """An asyncpg engine in ``schema`` (SQLAlchemySession's side)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(
        PG_URL.replace("postgresql://", "postgresql+asyncpg://", 1),
        connect_args={"server_settings": {"search_path": schema}},
    )


def convostore_store(schema: str) -> Any:
    """An async store in ``schema`` (ConvostoreSession's side)."""
    from convostore import AsyncConversationStore

    return AsyncConversationStore(f"{PG_URL}?options={quote(f'-csearch_path={schema}')}")


async def postgres_pair(reps: int) -> None:
    why = pg_unreachable()
    if why is not None:
        print(f"\nPostgreSQL pair skipped: {why}")
        return
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    with fresh_schemas(2) as schemas:
        engine, store = sqlalchemy_engine(schemas[0]), convostore_store(schemas[1])
        try:
            anchor = Side(
                "SQLAlchemySession (asyncpg)",
                lambda sid: SQLAlchemySession(sid, engine=engine, create_tables=True),
                lambda s: None,
            )
            ours = Side(
                "ConvostoreSession (psycopg)",
                lambda sid: ConvostoreSession(sid, store=store),
                lambda s: None,
            )
            await bench_pair([anchor, ours], reps)
            print_table("PostgreSQL 127.0.0.1", anchor, ours)
        finally:
            await engine.dispose()
            await store.aclose()


# -- concurrent writer processes on PostgreSQL -------------------------------------------------

WRITES = 200


def _session(kind: str, schema: str, sid: str) -> tuple[Any, Callable[[], Awaitable[Any]]]:
    """A session of ``kind`` in ``schema``, and what closes its connections."""
    if kind == "sqlalchemy":
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        engine = sqlalchemy_engine(schema)
        return SQLAlchemySession(sid, engine=engine, create_tables=True), engine.dispose
    store = convostore_store(schema)
    return ConvostoreSession(sid, store=store), store.aclose


async def _write(kind: str, schema: str, sid: str, ready: Any, start: Any) -> None:
    session, close = _session(kind, schema, sid)
    await session.get_items(limit=1)  # connected, tables there
    ready.put(sid)
    start.wait()
    for n in range(WRITES):
        await session.add_items(items(1, n))
    await close()


def _writer(kind: str, schema: str, sid: str, ready: Any, start: Any) -> None:
    asyncio.run(_write(kind, schema, sid, ready, start))


def writers_rate(kind: str, schema: str, writers: int) -> float:
    """Items per second of ``writers`` processes appending at once, each to its own session."""
    ctx = mp.get_context("spawn")
    ready, start = ctx.Queue(), ctx.Event()
    run = uuid.uuid4().hex[:6]
    procs = [
        ctx.Process(target=_writer, args=(kind, schema, f"w{i}-{run}", ready, start))
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=600)  # each writer imports the SDK first: slow on a loaded machine
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return writers * WRITES / elapsed


async def postgres_writers() -> None:
    why = pg_unreachable()
    if why is not None:
        print(f"\nPostgreSQL writers skipped: {why}")
        return
    with fresh_schemas(2) as names:
        schemas = dict(zip(("sqlalchemy", "ours"), names, strict=True))
        session, close = _session("sqlalchemy", schemas["sqlalchemy"], "setup")
        await session.get_items()  # its tables, created once before the writers start
        await close()
        counts = (1, 2, 4, 8)
        rates: dict[str, list[float]] = {kind: [] for kind in schemas}
        for n, writers in enumerate(counts):
            kinds = list(schemas) if n % 2 == 0 else list(reversed(schemas))
            for kind in kinds:
                rates[kind].append(writers_rate(kind, schemas[kind], writers))
    print(
        f"\nPostgreSQL 127.0.0.1: writer processes appending at once, each add_items of one item"
        f" {WRITES} times to its own session; items/s"
    )
    print("| side | " + " | ".join(f"{c} writer{'s' * (c > 1)}" for c in counts) + " | 8 vs 1 |")
    print("|---|" + "---|" * (len(counts) + 1))
    names = {"sqlalchemy": "SQLAlchemySession (asyncpg)", "ours": "ConvostoreSession (psycopg)"}
    for kind, row in rates.items():
        cells = " | ".join(f"{r:,.0f}/s" for r in row)
        print(f"| {names[kind]} | {cells} | {row[-1] / row[0]:.2f}x |")
    ratios = " | ".join(
        f"{o / a:.2f}x" for o, a in zip(rates["ours"], rates["sqlalchemy"], strict=True)
    )
    print(f"| ConvostoreSession / SQLAlchemySession (higher is better) | {ratios} | |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each workload")
    parser.add_argument(
        "--only", choices=["sqlite", "postgres", "writers"], help="run one part only"
    )
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {args.reps} reps; cells: median (min) ms")
    if args.only != "postgres":
        await sqlite_pair(args.reps)
    if args.only in (None, "postgres"):
        await postgres_pair(args.reps)
    if args.only in (None, "writers"):
        await postgres_writers()


if __name__ == "__main__":
    packages = ["convostore-openai", "openai-agents", "sqlalchemy", "asyncpg", "psycopg"]
    with markdown_report("convostore-openai benchmarks", packages):
        asyncio.run(main())
