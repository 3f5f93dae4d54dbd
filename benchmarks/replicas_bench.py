"""Reads through a store with a read replica, against the same reads sent straight to the
standby, on a real primary and hot standby started for the run (``tests/pg_cluster.py``:
Debian's PostgreSQL binaries as the ``postgres`` user, on free loopback ports).

    make bench-replicas   # or: .venvs/core/bin/python benchmarks/replicas_bench.py

"Routed" is ``ConversationStore(primary, replicas=[standby])``: each read asks the standby's
replay position in its own round trip and checks it against this process's last write.
"Straight" is the same store code reading the standby with no routing and no check. Both
servers share this machine's cores, and the standby logs every statement (that is how the
tests and this run count, on the server, which reads it answered), so absolute times are
this machine's; the ratio is the cost of the routing. "Read after write" appends a message
and reads the conversation back at once, through the routed store: how often the standby
had already replayed the write, and what the turn costs against the same turn with no
replica.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from convostore import ConversationStore
from convostore.backends.postgres import PostgresBackend
from convostore.backends.replicas import ReplicatedBackend
from pg_cluster import schema_urls, started_pair
from report import markdown_report

TEXT = "The quick brown fox jumps over the lazy dog. " * 4  # ~180 bytes, as a chat turn


class _Straight(PostgresBackend):
    """A backend that reads the standby directly: the schema is there already (replicated)."""

    def migrate(self, component: Any, steps: Any = None) -> None:
        pass


def straight_store(primary: str, standby: str) -> ConversationStore:
    store = ConversationStore(primary)
    store.backend.close()
    store.backend = _Straight(url=standby)
    return store


def paired(a: Callable[[], object], b: Callable[[], object], calls: int) -> tuple[float, float]:
    """Microseconds a call of ``a`` and of ``b``: the medians of ``calls`` calls of each, one
    of ``a`` then one of ``b``, so that both meet the same moments of a shared machine."""
    times_a, times_b = [], []
    for _ in range(calls):
        start = time.perf_counter()
        a()
        middle = time.perf_counter()
        b()
        times_a.append(middle - start)
        times_b.append(time.perf_counter() - middle)
    return statistics.median(times_a) * 1e6, statistics.median(times_b) * 1e6


THREADS, SECONDS = 8, 3.0


def throughput(store: ConversationStore) -> float:
    """Reads a second from ``THREADS`` threads, each reading its own conversation."""
    stop = time.monotonic() + SECONDS
    counts = [0] * THREADS

    def reader(i: int) -> None:
        while time.monotonic() < stop:
            store.get_messages(conversation_id=f"c{i}", limit=20, order="desc")
            counts[i] += 1

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / SECONDS


def turn(store: ConversationStore, i: int) -> None:
    """Append to conversation ``t<i>``, then read it back at once."""
    store.append_message(conversation_id=f"t{i}", role="user", content=TEXT)
    store.get_messages(conversation_id=f"t{i}", limit=20, order="desc")


def read_after_write(
    routed: ConversationStore, plain: ConversationStore, turns: int, rounds: int
) -> None:
    """A turn (append, then read the conversation back) through the routed store and through
    a store with no replica."""
    backend = routed.backend
    assert isinstance(backend, ReplicatedBackend)
    before = dict(backend.routed)
    mine, theirs = [], []
    for r in range(rounds):
        start = time.perf_counter()
        for i in range(turns):
            turn(routed, r * turns + i)
        mine.append((time.perf_counter() - start) / turns * 1e6)
        start = time.perf_counter()
        for i in range(turns):
            turn(plain, 10**6 + r * turns + i)
        theirs.append((time.perf_counter() - start) / turns * 1e6)
    after = dict(backend.routed)
    fresh = sum(n - before.get(k, 0) for k, n in after.items() if k != "primary")
    total = rounds * turns
    print(
        f"\nRead after write (append, then get_messages at once), µs a turn: routed"
        f" {statistics.median(mine):.0f}, no replica {statistics.median(theirs):.0f};"
        f" the standby answered {fresh:,} of {total:,} reads that followed a write"
        f" ({fresh / total:.1%}; a read waits for the standby to replay the write, up to"
        " max_replica_lag, and reads the primary after that)."
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--messages", type=int, default=50, help="per conversation")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    with markdown_report("Read replicas", ["convostore", "psycopg"]), started_pair() as pair:
        args = parser.parse_args()
        _, primary, standby = schema_urls(pair)
        with ConversationStore(primary) as writer:
            for c in range(args.conversations):
                writer.append_messages(
                    conversation_id=f"c{c}",
                    user_id=f"u{c % 20}",
                    messages=[
                        {"role": "user" if i % 2 == 0 else "assistant", "content": TEXT}
                        for i in range(args.messages)
                    ],
                )
            middle = writer.get_messages(conversation_id="c7", limit=args.messages // 2)[-1]
        pair.wait_caught_up()
        routed = ConversationStore(
            primary, replicas=[f"{standby}&application_name=bench_routed"], max_replica_lag=5
        )
        straight = straight_store(primary, f"{standby}&application_name=bench_straight")
        reads: dict[str, Callable[[ConversationStore], object]] = {
            "get_messages(limit=20), the newest": lambda s: s.get_messages(
                conversation_id="c7", limit=20, order="desc"
            ),
            "get_messages(limit=20), from the middle": lambda s: s.get_messages(
                conversation_id="c7", limit=20, after=middle.message_id
            ),
            "get_conversation": lambda s: s.get_conversation(conversation_id="c7"),
            "list_conversations(user_id=...)": lambda s: s.list_conversations(user_id="u7"),
            "get_history(conversation_id, user_id)": lambda s: s.get_history(
                conversation_id="c7", user_id="u7"
            ),
        }
        print(
            f"{args.conversations * args.messages:,} messages ({args.conversations} conversations);"
            f" µs a read, the median of {args.rounds * args.calls:,} calls of each side, alternating\n"
        )
        print("| read | routed (replicas=) | straight to the standby | routed / straight |")
        print("|---|---|---|---|")
        issued = 0
        for name, read in reads.items():
            a, b = paired(
                functools.partial(read, routed),
                functools.partial(read, straight),
                args.rounds * args.calls,
            )
            issued += args.rounds * args.calls
            print(f"| {name} | {a:.0f} | {b:.0f} | {a / b:.2f} |")
        backend = routed.backend
        assert isinstance(backend, ReplicatedBackend)
        on_standby = sum(n for k, n in backend.routed.items() if k != "primary")

        def logged(application: str) -> int:
            return sum("convostore_" in s for s in pair.standby.statements(application))

        # Counted on the server: the standby's log holds each statement of a read it answered,
        # under the store's application_name; the straight store, all of whose reads it
        # answered, issued the same reads, so the two counts' ratio is the routed share.
        served = logged("bench_routed") / logged("bench_straight")
        print(
            f"\nAnswered by the standby, counted on the standby (the statements it logged for"
            f" the routed store against those of the straight one, which issued the same"
            f" {issued:,} reads): {served:.1%}; by the store's own count, {on_standby:,} of"
            f" {issued:,}."
        )

        # Throughput: 8 threads reading for a few seconds, through the routed store (the
        # standby answers) and through a store with no replica (the primary answers).
        plain = ConversationStore(primary)
        print(f"\nget_messages(limit=20) from {THREADS} threads for {SECONDS} s, reads/s:")
        for side, store in [("routed to the standby", routed), ("the primary alone", plain)]:
            print(f"- {side}: {throughput(store):,.0f}")

        read_after_write(routed, plain, args.calls, args.rounds)
        for store in (routed, straight, plain):
            store.close()


if __name__ == "__main__":
    main()
