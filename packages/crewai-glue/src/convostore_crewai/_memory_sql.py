"""The SQL of the ``crewai.Memory`` backend: its tables (component ``crewai``) and statements.

Written with ``?`` placeholders for both databases; it runs only through the core's
``Backend.read`` / ``Backend.write`` / ``Backend.migrate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from convostore.spi import Backend, Component, Table, Tx

COMPONENT = "crewai"


class RecordRow(NamedTuple):
    id: str
    scope: str
    content: str
    categories: str  # JSON list
    metadata: str  # JSON object
    importance: float
    created_at: int  # epoch microseconds, UTC
    last_accessed: int
    source: str | None
    private: int
    term_count: int


_COLS = (
    "id, scope, content, categories, metadata, importance, created_at, last_accessed,"
    " source, private, term_count"
)
_R_COLS = ", ".join(f"r.{c.strip()}" for c in _COLS.split(","))

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE crewai_memory_records (
            id TEXT {collate} PRIMARY KEY,
            scope TEXT {collate} NOT NULL,
            content TEXT NOT NULL,
            categories TEXT NOT NULL,
            metadata TEXT NOT NULL,
            importance DOUBLE PRECISION NOT NULL,
            created_at BIGINT NOT NULL,
            last_accessed BIGINT NOT NULL,
            source TEXT,
            private INTEGER NOT NULL,
            term_count INTEGER NOT NULL
        )""",
        "CREATE INDEX crewai_memory_records_by_scope ON crewai_memory_records (scope, created_at)",
        "CREATE INDEX crewai_memory_records_by_time ON crewai_memory_records (created_at)",
        # The keyword index: one row per distinct hashed term of a record's content.
        """CREATE TABLE crewai_memory_terms (
            term INTEGER NOT NULL,
            record_id TEXT {collate} NOT NULL,
            PRIMARY KEY (term, record_id)
        )""",
        "CREATE INDEX crewai_memory_terms_by_record ON crewai_memory_terms (record_id)",
        """CREATE TABLE crewai_memory_categories (
            record_id TEXT {collate} NOT NULL,
            category TEXT {collate} NOT NULL,
            PRIMARY KEY (record_id, category)
        )""",
        "CREATE INDEX crewai_memory_categories_by_name"
        " ON crewai_memory_categories (category, record_id)",
    ],
]


MEMORY = Component(
    name=COMPONENT,
    steps=MIGRATIONS,
    tables=(
        Table("crewai_memory_records", ("id",), "CrewAI memory records"),
        Table("crewai_memory_terms", ("term", "record_id"), "CrewAI memory keywords"),
        Table("crewai_memory_categories", ("record_id", "category"), "CrewAI memory categories"),
    ),
    package="convostore-crewai",
)
"""The tables, registered under ``convostore.components`` (``convostore migrate`` copies them)."""


def migrate(backend: Backend) -> None:
    backend.migrate(MEMORY)


class Filter(NamedTuple):
    """Which records a statement touches; every given criterion must hold."""

    scope: str | None = None  # a normalized scope path; "/" or None is everything
    categories: Sequence[str] | None = None  # any of them
    record_ids: Sequence[str] | None = None
    older_than: int | None = None  # created_at strictly before (epoch microseconds)


def _where(f: Filter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if f.scope is not None and f.scope != "/":
        # The scope itself and everything under it: "/a" holds "/a/b" but not "/ab".
        # "0" is the character after "/", so the range is exactly the "/a/" prefix.
        clauses.append("(r.scope = ? OR (r.scope >= ? AND r.scope < ?))")
        params += [f.scope, f.scope + "/", f.scope + "0"]
    if f.categories:
        marks = ", ".join("?" for _ in f.categories)
        clauses.append(
            "EXISTS (SELECT 1 FROM crewai_memory_categories c"
            f" WHERE c.record_id = r.id AND c.category IN ({marks}))"
        )
        params += list(f.categories)
    if f.record_ids is not None:
        marks = ", ".join("?" for _ in f.record_ids) or "NULL"
        clauses.append(f"r.id IN ({marks})")
        params += list(f.record_ids)
    if f.older_than is not None:
        clauses.append("r.created_at < ?")
        params.append(f.older_than)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def delete_ids(tx: Tx, ids: Sequence[str]) -> None:
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        for table, column in (
            ("crewai_memory_terms", "record_id"),
            ("crewai_memory_categories", "record_id"),
            ("crewai_memory_records", "id"),
        ):
            tx.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)


def insert(tx: Tx, rows: Sequence[tuple[RecordRow, Sequence[int], Sequence[str]]]) -> None:
    """Insert records with their terms and categories (replacing records of the same id)."""
    delete_ids(tx, [row.id for row, _, _ in rows])
    tx.executemany(
        f"INSERT INTO crewai_memory_records ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [row for row, _, _ in rows],
    )
    tx.executemany(
        "INSERT INTO crewai_memory_terms (term, record_id) VALUES (?, ?)",
        [(term, row.id) for row, terms, _ in rows for term in terms],
    )
    tx.executemany(
        "INSERT INTO crewai_memory_categories (record_id, category) VALUES (?, ?)",
        [(row.id, category) for row, _, categories in rows for category in categories],
    )


def select(tx: Tx, f: Filter, *, limit: int | None = None, offset: int = 0) -> list[RecordRow]:
    """Matching records, newest first."""
    where, params = _where(f)
    sql = f"SELECT {_R_COLS} FROM crewai_memory_records r{where} ORDER BY r.created_at DESC, r.id"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [limit, offset]
    return [RecordRow(*r) for r in tx.execute(sql, params)]


def search(
    tx: Tx, terms: Sequence[int], f: Filter, limit: int | None
) -> list[tuple[RecordRow, int]]:
    """Records sharing terms with the query, with how many, best first.

    Ranked by hits² / term_count, which orders like the cosine of the two term sets.
    """
    where, params = _where(f)
    marks = ", ".join("?" for _ in terms)
    sql = (
        f"SELECT {_R_COLS}, h.hits FROM ("
        f"SELECT record_id, COUNT(*) AS hits FROM crewai_memory_terms WHERE term IN ({marks})"
        " GROUP BY record_id) h JOIN crewai_memory_records r ON r.id = h.record_id"
        f"{where} ORDER BY h.hits * h.hits * 1.0 / r.term_count DESC, r.created_at DESC, r.id"
    )
    all_params = [*terms, *params]
    if limit is not None:
        sql += " LIMIT ?"
        all_params.append(limit)
    return [(RecordRow(*r[:-1]), int(r[-1])) for r in tx.execute(sql, all_params)]


def ids(tx: Tx, f: Filter) -> list[str]:
    where, params = _where(f)
    return [
        str(r[0]) for r in tx.execute(f"SELECT r.id FROM crewai_memory_records r{where}", params)
    ]


def count(tx: Tx, f: Filter) -> int:
    where, params = _where(f)
    return int(tx.execute(f"SELECT COUNT(*) FROM crewai_memory_records r{where}", params)[0][0])


def scopes(tx: Tx, f: Filter) -> list[str]:
    where, params = _where(f)
    return [
        str(r[0])
        for r in tx.execute(f"SELECT DISTINCT r.scope FROM crewai_memory_records r{where}", params)
    ]


def scope_summary(tx: Tx, f: Filter) -> tuple[int, int | None, int | None]:
    where, params = _where(f)
    n, oldest, newest = tx.execute(
        f"SELECT COUNT(*), MIN(r.created_at), MAX(r.created_at) FROM crewai_memory_records r{where}",
        params,
    )[0]
    return int(n), oldest, newest


def category_counts(tx: Tx, f: Filter) -> dict[str, int]:
    where, params = _where(f)
    rows = tx.execute(
        "SELECT c.category, COUNT(*) FROM crewai_memory_categories c"
        f" JOIN crewai_memory_records r ON r.id = c.record_id{where} GROUP BY c.category",
        params,
    )
    return {str(name): int(n) for name, n in rows}


def touch(tx: Tx, record_ids: Sequence[str], now: int) -> None:
    tx.executemany(
        "UPDATE crewai_memory_records SET last_accessed = ? WHERE id = ?",
        [(now, rid) for rid in record_ids],
    )
