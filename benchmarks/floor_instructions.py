"""Instructions a store call takes against its floor by hand (the rows read with the driver
alone and decoded by ``json.loads``; an append's minimal transaction), counted by valgrind's
callgrind in one run: a ratio the machine's load does not move.

    .venvs/core/bin/python benchmarks/floor_instructions.py --url sqlite \\
        --src packages/core/src --src ../before/packages/core/src

The floors are ``core_bench``'s (``by_hand_reads``, ``raw_same_work_sqlite``). Each call runs
``CALLS`` times inside its own ``sorted()`` call, which callgrind collects alone and dumps
after (``--toggle-collect``, ``--dump-after``). Appends run 512 times, two of the search
index's batches of 256. A PostgreSQL URL counts the client's instructions only (the server is
another process) and reads only. Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS = 200
APPENDS = 512
READS = ("get_messages(limit=20)", 'get_messages(limit=20, order="desc")', "list_conversations")


def workload(url: str, tmp: str) -> None:
    from convostore import ConversationStore
    from core_bench import CONTENT, by_hand_reads, fill, raw_same_work_sqlite

    store = ConversationStore(url)
    fill(store, "page", 1_000)
    for i in range(200):
        store.update_conversation(conversation_id=f"l{i}", metadata={"n": i}, user_id="lister")
    floor = by_hand_reads(url)
    pairs = [
        (lambda: store.get_messages(conversation_id="page", limit=20), floor["asc"]),
        (
            lambda: store.get_messages(conversation_id="page", limit=20, order="desc"),
            floor["desc"],
        ),
        (lambda: store.list_conversations(user_id="lister", limit=20), floor["list"]),
    ]
    calls = [(f, CALLS) for pair in pairs for f in pair]
    if url.startswith("sqlite:///"):
        count = iter(range(10**9))

        def append() -> None:
            cid = f"bench{next(count) // 1000}"
            store.append_message(conversation_id=cid, role="user", content=CONTENT)

        calls += [(append, APPENDS), (raw_same_work_sqlite(f"{tmp}/by-hand.db"), APPENDS)]
    for f, _ in calls:
        f()
    print(f"MEASURED {len(calls)}", file=sys.stderr, flush=True)
    for f, n in calls:
        sorted(range(n), key=lambda _, f=f: (f(), 0)[1])  # collected alone (--toggle-collect)
    os._exit(0)  # nothing more is dumped (a close may sort)


def count(src: Path, url: str) -> list[float]:
    """Instructions a call of each measured function, with ``src`` imported first."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run_url = f"sqlite:///{tmp}/store.db" if url == "sqlite" else url
        run = subprocess.run(
            [
                *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
                *("--collect-atstart=no", "--toggle-collect=builtin_sorted"),
                "--dump-after=builtin_sorted",
                *(sys.executable, __file__, "--run", run_url, "--tmp", tmp),
            ],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(src.resolve()), HERE])},
            capture_output=True,
            text=True,
            check=True,
        )
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        totals = [int(re.findall(r"^totals: (\d+)", p.read_text(), re.M)[0]) for p in dumps]
    measured = int(re.findall(r"MEASURED (\d+)", run.stderr)[0])
    sizes = [CALLS] * 6 + [APPENDS] * 2
    return [t / n for t, n in zip(totals[-measured:], sizes[:measured], strict=True)]


HERE = str(Path(__file__).parent.resolve())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, action="append", default=[])
    parser.add_argument("--url", default="sqlite")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # inside valgrind
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run is not None:
        workload(args.run, args.tmp)
        return
    names = [*READS, "append_message"]
    print("| source | call | convostore | by hand | ratio |")
    print("|---|---|---|---|---|")
    for src in args.src or [Path("packages/core/src")]:
        counts = count(src, args.url)
        for i in range(len(counts) // 2):
            ours, floor = counts[2 * i], counts[2 * i + 1]
            print(
                f"| {src} | {names[i]} | {ours / 1e3:,.0f} K | {floor / 1e3:,.0f} K"
                f" | {ours / floor:.2f}× |"
            )


if __name__ == "__main__":
    main()
