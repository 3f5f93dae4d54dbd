"""Instructions a fixed workload of store calls takes, counted by valgrind's callgrind: a cost
that the machine's load does not move (wall times do, on a shared machine), for judging a
change that should cost nothing, such as a change of structure. Each source tree is counted
twice, with the workload and without it (the imports and the open), and the difference printed:

    .venvs/core/bin/python benchmarks/instructions.py --url sqlite \\
        --src packages/core/src --src ../before/packages/core/src

``--src`` is the core's source folder of a checkout (``git worktree add ../before <commit>``
makes one); its ``convostore`` is imported ahead of the installed one. The workload: 300
appends to 10 conversations of one user, 600 pages of 20 (ascending and descending), 150
listings of that user's conversations. ``--url sqlite`` is a new SQLite file; a PostgreSQL URL
counts the client's instructions only (the server is another process). Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

CALLS = 300


def workload(url: str, n: int) -> None:
    from convostore import ConversationStore

    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/instructions.db"
    tag = uuid.uuid4().hex[:8]
    with ConversationStore(url) as store:
        for i in range(n):
            store.append_message(
                conversation_id=f"c{tag}{i % 10}",
                role="user",
                content=f"hello there number {i} " * 5,
                user_id=f"u{tag}",
            )
        for i in range(n):
            for order in ("asc", "desc"):
                store.get_messages(conversation_id=f"c{tag}{i % 10}", limit=20, order=order)
        for _ in range(n // 2):
            store.list_conversations(user_id=f"u{tag}", limit=20)


def callgrind(script: str, args: list[str], src: Path) -> int:
    """Instructions of ``python script *args`` under callgrind, with ``src`` imported first."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
                *(sys.executable, script, *args),
            ],
            env={**os.environ, "PYTHONPATH": str(src.resolve())},
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    assert found, run.stderr[-2000:]
    return int(found.group(1))


def count(src: Path, url: str, n: int) -> int:
    """Instructions of this script's workload of ``n`` calls, with ``src`` imported."""
    return callgrind(__file__, ["--run", str(n), "--url", url], src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", default=[])
    parser.add_argument("--url", default="sqlite")
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # inside valgrind
    args = parser.parse_args()
    if args.run is not None:
        workload(args.url, args.run)
        return
    first = None
    for src in args.src or [Path("packages/core/src")]:
        took = count(src, args.url, CALLS) - count(src, args.url, 0)
        first = first or took
        print(f"{src}: {took / 1e6:,.1f} M instructions ({took / first:.4f}× the first)")


if __name__ == "__main__":
    main()
