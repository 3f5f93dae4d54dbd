"""CrewAI runs offline: telemetry off, files in a temp dir, a scripted model, no network."""

from __future__ import annotations

import os
import shutil
import tempfile

# CrewAI writes its storage and lock files under the home and temp dirs: give it one of its
# own, removed when the session ends.
_HOME = tempfile.mkdtemp(prefix="convostore-crewai-")
tempfile.tempdir = _HOME
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "CREWAI_TESTING": "true",
        "CREWAI_STORAGE_DIR": "convostore-tests",
        "XDG_DATA_HOME": _HOME,
        "XDG_CONFIG_HOME": _HOME,
        "TMPDIR": _HOME,  # subprocesses too
    }
)

import socket  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

_real_connect = socket.socket.connect
_LOCAL_PORTS = {5432}  # the PostgreSQL server the storage tests use
_attempts: list[object] = []


def _guarded_connect(self: socket.socket, address: object) -> object:
    if self.family == socket.AF_UNIX:
        return _real_connect(self, address)  # type: ignore[arg-type]
    host, port = address[0], address[1]  # type: ignore[index]
    if host in ("127.0.0.1", "::1", "localhost") and port in _LOCAL_PORTS:
        return _real_connect(self, address)  # type: ignore[arg-type]
    _attempts.append(address)  # kept: the caller may swallow the error below
    raise OSError(f"network access attempted during a test: {address!r}")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    # CrewAI's own internals raise dozens of DeprecationWarnings per kickoff.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning")
    # The tests' own lambda callbacks (test_callbacks checks that the glue adds no warning).
    config.addinivalue_line(
        "filterwarnings", "ignore:function callbacks cannot be serialized:UserWarning"
    )


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any test that tries to reach the network (PostgreSQL on 127.0.0.1 excepted)."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    _attempts.clear()
    yield
    assert _attempts == [], f"network access attempted: {_attempts}"


@pytest.fixture(autouse=True)
def isolated_event_bus() -> Iterator[None]:
    """CrewAI's event bus is process-wide: give each test its own handlers."""
    from crewai.events.event_bus import crewai_event_bus

    with crewai_event_bus.scoped_handlers():
        yield
        crewai_event_bus.flush()
