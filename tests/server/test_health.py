"""``GET /healthz`` and ``GET /readyz`` on the real server: unauthenticated, saying nothing but
ok or unavailable, and ``/readyz`` following the database (its schema's version, PostgreSQL
stopped or hanging behind a proxy, and back)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from convostore.components import CORE
from served import Server, pg_schema, start
from tcp_proxy import Proxy

OK = b'{"status":"ok"}'
UNAVAILABLE = b'{"status":"unavailable"}'


def _probe(server: Server, path: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{server.base}{path}", headers=headers, timeout=60)


def _set_core_version(url: str, version: int) -> None:
    """Write the core's schema version by hand (opening a store would migrate it)."""
    statement = "UPDATE convostore_schema SET version = {} WHERE component = 'core'"
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            conn.execute(statement.format(version))
            conn.commit()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement.format(version).encode())


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_probe_needs_no_token_and_says_nothing_but_ok(server: Server, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic x"}):
        answer = _probe(server, path, **headers)
        assert (answer.status_code, answer.content) == (200, OK)
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["cache-control"] == "no-store"
    admin = server.client("admin").get(path)
    assert (admin.status_code, admin.content) == (200, OK)


def test_readyz_is_503_while_the_schema_is_not_this_installs(server: Server) -> None:
    """A database migrated by a newer install, or not yet migrated to this one's version,
    is not ready; the liveness probe does not look at the database."""
    try:
        for version in (CORE.version + 1, CORE.version - 1):
            _set_core_version(server.store_url, version)
            answer = _probe(server, "/readyz")
            assert (answer.status_code, answer.content) == (503, UNAVAILABLE)
            assert answer.headers["cache-control"] == "no-store"
            assert _probe(server, "/healthz").status_code == 200
    finally:
        _set_core_version(server.store_url, CORE.version)
    assert _probe(server, "/readyz").content == OK


def _through(proxy: Proxy, url: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else ""
    return urlunsplit(parts._replace(netloc=netloc or f"127.0.0.1:{proxy.port}"))


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Server, Proxy]]:
    """A server whose PostgreSQL is reached through a proxy the test stops and starts."""
    with pg_schema() as url:
        parts = urlsplit(url)
        proxy = Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        server = start(_through(proxy, url), tmp_path, "--ready-timeout", "1")
        try:
            yield server, proxy
        finally:
            server.stop()
            proxy.close()


def _until(server: Server, status: int) -> None:
    """Probe ``/readyz`` until it answers ``status`` (pytest's timeout guards a hang)."""
    while _probe(server, "/readyz").status_code != status:
        time.sleep(0.1)


def test_readyz_follows_postgresql_stopping_hanging_and_coming_back(
    proxied: tuple[Server, Proxy],
) -> None:
    server, proxy = proxied
    assert _probe(server, "/readyz").content == OK
    proxy.hang()  # the database stops answering: the bound answers for it
    for _ in range(3):
        answer = _probe(server, "/readyz")
        assert (answer.status_code, answer.content) == (503, UNAVAILABLE)
    assert _probe(server, "/healthz").content == OK  # the process still answers
    proxy.up()
    _until(server, 200)
    proxy.down()  # stopped: connections closed, new ones refused
    answer = _probe(server, "/readyz")
    assert (answer.status_code, answer.content) == (503, UNAVAILABLE)
    proxy.up()
    _until(server, 200)
    log = server.log_text()
    assert "Traceback" not in log and "127.0.0.1:" + str(proxy.port) not in log
