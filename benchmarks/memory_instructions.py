"""Instructions and bytes written of memory updates against the LangGraph store's ``put`` on
SQLite, counted by valgrind's callgrind (a cost the machine's load does not move; SQLite runs
in the process, so its B-tree and FTS5 work is counted, the kernel's writes are not):

    .venvs/langgraph/bin/python benchmarks/memory_instructions.py \\
        --src packages/core/src --src ../before/packages/core/src

Each ``--src`` (the core's source folder of a checkout; ``git worktree add ../before <commit>``
makes one) is counted with 512 calls and with none (the imports, the open, the setup), the
difference printed per call, with the bytes the calls wrote (``/proc/self/io``, measured
outside valgrind). A 2 KB entry updated in place of its previous text, as
``memory_bench.py`` does; 512 calls include two of the search index's batches.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from instructions import callgrind

CALLS = 512
TEXT = ("Notes on the deploy process. " * 80)[:2048]


def workload(op: str, n: int) -> int:
    """Run ``n`` calls of ``op`` after the setup; the bytes they wrote."""
    from convostore import ConversationStore
    from convostore_langgraph import ConvostoreStore

    with tempfile.TemporaryDirectory() as tmp, ConversationStore(f"sqlite:///{tmp}/m.db") as store:
        kv = ConvostoreStore(store)
        sid = store.create_memory_store("work").memory_store_id
        entry = store.create_memory(sid, "hot.md", TEXT)
        kv.put(("work",), "hot.md", {"text": TEXT})
        texts, version = [TEXT, TEXT[::-1]], [entry.version]

        def update() -> None:
            text = texts[version[0] % 2]
            version[0] = store.update_memory(sid, entry.entry_id, text, version[0]).version

        def put() -> None:
            texts.reverse()
            kv.put(("work",), "hot.md", {"text": texts[0]})

        fn: Callable[[], None] = update if op == "update" else put
        before = wchar()
        for _ in range(n):
            fn()
        return wchar() - before


def wchar() -> int:
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar"))


def written(src: Path, op: str) -> int:
    """Bytes ``CALLS`` calls of ``op`` write, in a process of their own (no valgrind)."""
    run = subprocess.run(
        [sys.executable, __file__, "--run", str(CALLS), "--op", op],
        env={**os.environ, "PYTHONPATH": str(src.resolve())},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(run.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", default=[])
    parser.add_argument("--op", default="update", help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, help=argparse.SUPPRESS)  # inside valgrind
    args = parser.parse_args()
    if args.run is not None:
        print(workload(args.op, args.run))
        return
    for src in args.src or [Path("packages/core/src")]:
        per = {}
        for op in ("update", "put"):
            took = callgrind(__file__, ["--run", str(CALLS), "--op", op], src)
            took -= callgrind(__file__, ["--run", "0", "--op", op], src)
            per[op] = (took / CALLS, written(src, op) / CALLS)
        (ui, ub), (pi, pb) = per["update"], per["put"]
        print(
            f"{src}: update {ui / 1e3:,.0f}k instructions, {ub:,.0f} bytes written a call;"
            f" put {pi / 1e3:,.0f}k, {pb:,.0f} bytes; update / put {ui / pi:.2f}x instructions,"
            f" {ub / pb:.2f}x bytes"
        )


if __name__ == "__main__":
    main()
