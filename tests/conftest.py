"""Shared fixtures: every storage test runs on memory, an SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

if TYPE_CHECKING:
    from pg_cluster import Pair

PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["memory", "sqlite", "postgres"]


def _pg_reachable() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3):
            return None
    except Exception as exc:  # any failure means: not reachable here
        return str(exc)


_PG_ERROR: list[str | None] = []


def pg_error() -> str | None:
    if not _PG_ERROR:
        _PG_ERROR.append(_pg_reachable())
    return _PG_ERROR[0]


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    error = pg_error()
    if error is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"PostgreSQL is required under CI=true but unreachable at {PG_URL}: {error}"
            )
        if "does not exist" in error:
            how = "create the database: createdb -h 127.0.0.1 -U postgres test"
        else:
            how = (
                "start it with 'pg_ctlcluster --skip-systemctl-redirect"
                " $(ls /etc/postgresql) main start'"
            )
        pytest.skip(
            f"PostgreSQL unreachable at {PG_URL} ({error}); {how}, or set CONVOSTORE_TEST_PG"
        )
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


@pytest.fixture(params=BACKENDS)
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each kind: memory, an SQLite file, PostgreSQL."""
    return _url(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database several stores and processes can open together (not memory)."""
    return _url(request.param, request, tmp_path)


# -- a primary and a streaming hot standby (tests/pg_cluster.py), started once a session ----


@pytest.fixture(scope="session")
def pair() -> Iterator[Pair]:
    """A primary and its hot standby, started on first use, stopped when the session ends."""
    from pg_cluster import missing, started_pair

    why = missing()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the replica tests need a PostgreSQL pair under CI=true: {why}")
        pytest.skip(why)
    with started_pair() as started:
        yield started


@pytest.fixture
def urls(pair: Pair) -> Iterator[tuple[str, str]]:
    """The primary's and the standby's URLs on a fresh schema, the standby caught up (its
    replay running) before and after the test."""
    from pg_cluster import schema_urls

    pair.resume_replay()
    schema, primary, standby = schema_urls(pair)
    pair.wait_caught_up()
    yield primary, standby
    if not _running(pair):
        pair.standby.start()
    pair.resume_replay()
    with pair.primary.connect() as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _running(pair: Pair) -> bool:
    return (pair.standby.data / "postmaster.pid").exists()
