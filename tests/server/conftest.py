"""Fixtures: a real server per test module, on an SQLite file and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from served import Server, start, store_url


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """``convostore-server`` on an empty database, with tokens for alice, bob and an admin;
    tests share it within a module and keep apart by using fresh ids."""
    tmp = tmp_path_factory.mktemp(f"server-{request.param}")
    with store_url(request.param, tmp) as url:
        running = start(url, tmp)
        yield running
        running.stop()
    log = running.log_text()
    assert '" 500' not in log and "Traceback" not in log, log[-3000:]
