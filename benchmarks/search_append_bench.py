"""What the search index adds to ``append_message``: the same store with its index and
without it, side by side, on SQLite and PostgreSQL, as ratios.

    make bench-search   # or: .venvs/core/bin/python benchmarks/search_append_bench.py

"Without the index" is the same store with its index statements skipped (this benchmark
swaps ``SqliteSearch.insert_messages`` for one writing no FTS row, and makes PostgreSQL's
``search_text`` NULL) and, on PostgreSQL, the index's SQL indexes dropped (the one on
``created_at`` too). SQLite indexes appends a batch of ``INDEX_BATCH`` at a time, so a round
is two batches of appends (a round of another size would charge a batch's indexing to fewer
appends, or to none). Beside the time, on SQLite, the bytes the process wrote a call
(``/proc/self/io``: the WAL and its checkpoints), which the machine's load does not move.
Each append is a 180-byte text to one of 10 conversations; rounds alternate which store goes
first; the figures are the medians of the rounds after the first. PostgreSQL is
$CONVOSTORE_TEST_PG, in scratch schemas dropped afterwards.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from convostore import ConversationStore
from convostore.backends import postgres as pg_backend
from convostore.backends import search as search_backend
from convostore.backends.sqlite import INDEX_BATCH
from report import markdown_report
from search_bench import databases

APPEND_ROUNDS = 7
APPENDS = 2 * INDEX_BATCH  # a round holds two of SQLite's index batches (see above)


@contextmanager
def without_index(kind: str) -> Iterator[None]:
    """The store's index statements skipped (see the module's docstring)."""
    if kind == "sqlite":
        cls = search_backend.SqliteSearch
        saved = cls.insert_messages

        def plain(self: Any, cid: str, rows: Any) -> None:
            self._insert(cid, rows, [None] * len(rows))

        cls.insert_messages = plain  # type: ignore[method-assign]
        try:
            yield
        finally:
            cls.insert_messages = saved  # type: ignore[method-assign]
        return
    saved_pg, saved_search = pg_backend.index_text, search_backend.index_text
    pg_backend.index_text = search_backend.index_text = lambda content: None  # type: ignore[assignment, return-value]
    try:
        yield
    finally:
        pg_backend.index_text, search_backend.index_text = saved_pg, saved_search


def written() -> int:
    """The bytes this process has written so far (Linux)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


def drop_index(kind: str, url: str) -> None:
    if kind == "sqlite":
        return  # the FTS5 table is left, unwritten; SQLite keeps no other index of its own
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute("DROP INDEX convostore_messages_search")
        pg.execute("DROP INDEX convostore_messages_unindexed")
        pg.execute("DROP INDEX convostore_messages_by_time")


def unindexed(kind: str, store: ConversationStore) -> int:
    mark = "search_rid" if kind == "sqlite" else "search_text"
    return int(
        store.backend.read(
            lambda tx: tx.execute(f"SELECT count(*) FROM convostore_messages WHERE {mark} IS NULL")
        )[0][0]
    )


def appends(kind: str) -> str:
    """Median µs of ``append_message`` (a 180-byte text), with the index and without."""
    text = "The quick brown fox jumps over the lazy dog. " * 4
    with (
        databases(kind, 2) as (with_url, without_url),
        ConversationStore(with_url) as a,
        ConversationStore(without_url) as b,
    ):
        drop_index(kind, without_url)
        times: dict[str, list[float]] = {"with": [], "without": []}
        wrote: dict[str, list[float]] = {"with": [], "without": []}
        n = 0

        def run(store: ConversationStore, side: str) -> None:
            nonlocal n
            start, before = time.perf_counter(), written()
            for i in range(APPENDS):
                store.append_message(
                    conversation_id=f"c{n % 10}", role="user", content=f"{i} {text}"
                )
            times[side].append((time.perf_counter() - start) / APPENDS)
            wrote[side].append((written() - before) / APPENDS)
            n += 1

        for r in range(APPEND_ROUNDS + 1):
            for side in ("with", "without") if r % 2 else ("without", "with"):
                if side == "with":
                    run(a, side)
                else:
                    with without_index(kind):
                        run(b, side)
        a.reindex()  # SQLite indexes appends a batch at a time: the last one, untimed
        assert unindexed(kind, a) == 0 and unindexed(kind, b) == len(times["without"]) * APPENDS
        with_us = statistics.median(times["with"][1:]) * 1e6
        without_us = statistics.median(times["without"][1:]) * 1e6
        with_b, without_b = (statistics.median(wrote[side][1:]) for side in ("with", "without"))
    bytes_cell = (
        f"{with_b:,.0f} B / {without_b:,.0f} B ({with_b / without_b:.2f}×)"
        if kind == "sqlite"
        else "(the server writes)"
    )
    return (
        f"| {kind} | {with_us:,.0f} µs | {without_us:,.0f} µs | {with_us / without_us:.2f}×"
        f" | {bytes_cell} |"
    )


def main() -> None:
    rows = [appends(kind) for kind in ("sqlite", "postgresql")]
    print(
        f"### `append_message` with the index and without (medians of {APPEND_ROUNDS} rounds"
        f" of {APPENDS}, interleaved)\n"
    )
    print("| backend | with the index | without | ratio | bytes written a call, with / without |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    with markdown_report("What the search index adds to an append", ["convostore", "psycopg"]):
        main()
