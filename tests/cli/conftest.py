"""Fixtures of the command-line tests (helpers are in cli_helpers.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from cli_helpers import PG_URL, run


@pytest.fixture
def cli() -> Callable[..., object]:
    return run


@pytest.fixture
def new_pg_url(pg_schema_url: str) -> Iterator[Callable[[], str]]:
    """Makes URLs of fresh PostgreSQL schemas (the first is ``pg_schema_url``'s)."""
    import psycopg

    made: list[str] = []
    first = [pg_schema_url]

    def make() -> str:
        if first:
            return first.pop()
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        made.append(schema)
        sep = "&" if "?" in PG_URL else "?"
        return f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"

    yield make
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for schema in made:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def url_of(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """``url_of("sqlite")`` / ``url_of("postgres")``: a new empty database of that kind."""
    count = iter(range(1000))

    def make(kind: str) -> str:
        if kind == "sqlite":
            return f"sqlite:///{tmp_path / f'db{next(count)}.db'}"
        return str(request.getfixturevalue("new_pg_url")())

    return make
