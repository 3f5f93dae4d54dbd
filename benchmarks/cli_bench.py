"""The ``convostore`` command on a large store: rows per second of ``export``, ``import`` and
``migrate`` SQLite -> PostgreSQL, each beside the floor of moving the same rows plainly, and
the command's peak memory at two store sizes (flat memory: the same peak at both).

    make bench-cli    # or: .venvs/core/bin/python benchmarks/cli_bench.py [--messages 1000000]

Each command runs as installed, in a subprocess (its peak RSS read from ``wait4``). Floors:
export, a plain cursor over the message table writing one tab-separated line per row; import,
one ``executemany`` INSERT of the same rows into an empty message table of a new store, in one
transaction; migrate, a plain cursor over the SQLite tables into PostgreSQL ``COPY``.
PostgreSQL is $CONVOSTORE_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test), in
scratch schemas dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from convostore import ConversationStore
from report import markdown_report, pg_schema

CONVOSTORE = str(Path(sys.executable).parent / "convostore")
PER_CONVERSATION = 100
TEXT = "The quick brown fox jumps over the lazy dog. " * 4  # ~180 bytes, as a chat turn
MSG_COLS = "conversation_id, seq, id, role, content, metadata, created_at, updated_at"


def build(path: Path, messages: int) -> None:
    """A store of ``messages`` messages, ``PER_CONVERSATION`` per conversation."""
    with ConversationStore(f"sqlite:///{path}") as store:
        for c in range(messages // PER_CONVERSATION):
            store.append_messages(
                conversation_id=f"conv-{c:07}",
                user_id=f"user-{c % 100}",
                messages=[
                    {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} {TEXT}"}
                    for i in range(PER_CONVERSATION)
                ],
            )


def command(*args: str) -> tuple[float, int]:
    """Run ``convostore ARGS``; its wall time (s) and peak RSS (MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([CONVOSTORE, *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"convostore {' '.join(args)} failed ({status})")
    return elapsed, usage.ru_maxrss // 1024


def floor_export(db: Path, out: Path) -> float:
    start = time.perf_counter()
    conn = sqlite3.connect(db)
    with open(out, "w", encoding="utf-8") as f:
        for row in conn.execute(f"SELECT {MSG_COLS} FROM convostore_messages"):
            f.write("\t".join(map(str, row)) + "\n")
    conn.close()
    return time.perf_counter() - start


def floor_import(db: Path, scratch: Path) -> float:
    ConversationStore(f"sqlite:///{scratch}").close()  # an empty store: its tables and indexes
    rows = sqlite3.connect(db).execute(f"SELECT {MSG_COLS} FROM convostore_messages")
    start = time.perf_counter()
    conn = sqlite3.connect(scratch, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN")
    conn.executemany(
        f"INSERT INTO convostore_messages ({MSG_COLS}) VALUES ({', '.join('?' * 8)})", rows
    )
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - start


def floor_migrate(db: Path, url: str) -> float:
    ConversationStore(url).close()  # the same tables and indexes, empty
    start = time.perf_counter()
    src = sqlite3.connect(db)
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        for table, cols in (
            (
                "convostore_conversations",
                "id, user_id, created_at, last_message_at, message_count, next_seq, metadata",
            ),
            ("convostore_messages", MSG_COLS),
        ):
            with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in src.execute(f"SELECT {cols} FROM {table}"):
                    copy.write_row(row)
    src.close()
    return time.perf_counter() - start


STEPS = {"floor_export": floor_export, "floor_import": floor_import, "floor_migrate": floor_migrate}


def step(name: str, *args: str) -> float:
    """Run a step in a fresh process, so that this one stays small: a child's peak RSS
    counts what it held before it exec'd the command, that is, this process's size."""
    out = subprocess.run(
        [sys.executable, __file__, "--step", name, *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def measure(messages: int, folder: Path) -> dict[str, tuple[float, float, int]]:
    """Per operation: (rows/s of the command, rows/s of the floor, peak RSS MB)."""
    db = folder / f"store-{messages}.db"
    started = time.perf_counter()
    step("build", str(db), str(messages))
    print(f"  built {messages:,} messages in {time.perf_counter() - started:.0f} s", flush=True)
    rows = messages + messages // PER_CONVERSATION  # messages and conversations
    result = {}
    out = folder / "export.jsonl"
    took, rss = command("export", "--url", f"sqlite:///{db}", "-o", str(out))
    result["export"] = (
        rows / took,
        rows / step("floor_export", str(db), str(folder / "floor.tsv")),
        rss,
    )
    took, rss = command(
        "import", str(out), "--url", f"sqlite:///{folder / f'imported-{messages}.db'}"
    )
    result["import"] = (
        rows / took,
        rows / step("floor_import", str(db), str(folder / f"floor-{messages}.db")),
        rss,
    )
    with pg_schema() as ours, pg_schema() as plain:
        took, rss = command("migrate", f"sqlite:///{db}", ours)
        result["migrate"] = (rows / took, rows / step("floor_migrate", str(db), plain), rss)
    for name in ("export.jsonl", "floor.tsv"):
        (folder / name).unlink()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--step", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        name, *rest = args.step
        if name == "build":
            build(Path(rest[0]), int(rest[1]))
            print(0.0)
        else:
            print(STEPS[name](Path(rest[0]), rest[1] if name == "floor_migrate" else Path(rest[1])))  # type: ignore[operator]
        return
    sizes = [args.messages // 10, args.messages]
    with tempfile.TemporaryDirectory(prefix="convostore-cli-bench-") as tmp:
        results = {}
        for size in sizes:
            print(f"measuring at {size:,} messages", flush=True)
            results[size] = measure(size, Path(tmp))
    small, large = sizes
    print()
    print(
        f"| command ({large:,} messages, {large // PER_CONVERSATION:,} conversations) | rows/s | floor rows/s | ratio | peak RSS at {small:,} | at {large:,} |"
    )
    print("|---|---|---|---|---|---|")
    floors = {
        "export": "cursor → TSV lines",
        "import": "executemany INSERT",
        "migrate": "cursor → COPY",
    }
    for op in ("export", "import", "migrate"):
        ours, floor, rss = results[large][op]
        print(
            f"| `{op}` (floor: {floors[op]}) | {ours:,.0f} | {floor:,.0f} | {ours / floor:.2f}×"
            f" | {results[small][op][2]} MB | {rss} MB |"
        )


if __name__ == "__main__":
    with markdown_report("The convostore command on a large store", ["convostore", "psycopg"]):
        main()
