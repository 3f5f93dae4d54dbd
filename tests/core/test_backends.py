"""The backends' transaction contract, on SQLite and PostgreSQL: a read is one snapshot; a
call that promises ``single_statement`` runs without BEGIN/COMMIT where that saves round trips
and is refused a second statement."""

from __future__ import annotations

from typing import Any

import pytest
from convostore import ConversationStore
from convostore.backends import Tx

TABLE = "CREATE TABLE IF NOT EXISTS t_backend (k INTEGER PRIMARY KEY, v TEXT)"


@pytest.fixture
def db(shared_url: str) -> Any:
    with ConversationStore(shared_url) as store:
        store.backend.write(lambda tx: tx.execute(TABLE))
        yield store


def rows(store: ConversationStore) -> list[tuple[Any, ...]]:
    return store.backend.read(lambda tx: tx.execute("SELECT k, v FROM t_backend ORDER BY k"))


def test_a_read_sees_one_snapshot(db: ConversationStore, shared_url: str) -> None:
    """A write committed by another store between a read's two statements is not seen by
    the second (PostgreSQL: REPEATABLE READ; SQLite: WAL snapshot)."""
    db.backend.write(lambda tx: tx.execute("INSERT INTO t_backend VALUES (1, 'a')"))
    with ConversationStore(shared_url) as other:

        def read(tx: Tx) -> tuple[Any, Any]:
            first = tx.execute("SELECT count(*) FROM t_backend")[0][0]
            other.backend.write(lambda w: w.execute("INSERT INTO t_backend VALUES (2, 'b')"))
            return first, tx.execute("SELECT count(*) FROM t_backend")[0][0]

        assert db.backend.read(read) == (1, 1)
    assert rows(db) == [(1, "a"), (2, "b")]


def test_single_statement_calls_read_and_write(db: ConversationStore) -> None:
    assert rows(db) == []  # a read-only snapshot first: it must not make the next write read-only
    db.backend.write(
        lambda tx: tx.execute("INSERT INTO t_backend VALUES (1, 'a')"), single_statement=True
    )
    db.backend.write(
        lambda tx: tx.executemany("INSERT INTO t_backend VALUES (?, ?)", [(2, "b")]),
        single_statement=True,
    )
    found = db.backend.read(
        lambda tx: tx.execute("SELECT v FROM t_backend ORDER BY k"), single_statement=True
    )
    assert found == [("a",), ("b",)]
    # a transaction on the same pooled connection afterwards is a normal one again
    db.backend.write(
        lambda tx: [tx.execute(f"INSERT INTO t_backend VALUES ({k}, 'x')") for k in (3, 4)]
    )
    assert len(rows(db)) == 4


def test_single_statement_refuses_a_second_statement(db: ConversationStore) -> None:
    db.backend.write(lambda tx: tx.execute("INSERT INTO t_backend VALUES (1, 'a')"))

    def two_reads(tx: Tx) -> None:
        tx.execute("SELECT 1")
        tx.execute("SELECT 2")

    with pytest.raises(RuntimeError, match="single_statement"):
        db.backend.read(two_reads, single_statement=True)
    # several rows are several statements: refused before any is written
    with pytest.raises(RuntimeError, match="single_statement"):
        db.backend.write(
            lambda tx: tx.executemany("INSERT INTO t_backend VALUES (?, ?)", [(2, "b"), (3, "c")]),
            single_statement=True,
        )
    assert rows(db) == [(1, "a")]


def test_postgres_single_statement_runs_outside_begin(pg_schema_url: str) -> None:
    """Without BEGIN the statement is its transaction's first: both clocks agree. After a
    separate BEGIN they do not."""
    same = "SELECT transaction_timestamp() = statement_timestamp()"
    with ConversationStore(pg_schema_url) as db:
        for call in (db.backend.read, db.backend.write):
            assert call(lambda tx: tx.execute(same), single_statement=True) == [(True,)]
            assert call(lambda tx: tx.execute(same)) == [(False,)]
