"""A real convostore-server (uvicorn in a subprocess on a free loopback port) for the tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from convostore_server import new_token

BIN = Path(sys.executable).parent
HERE = Path(__file__).parent
PG_URL = os.environ.get("CONVOSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
USERS = ("alice", "bob")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any convostore setting of the machine, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVOSTORE_")}
    env["PYTHONPATH"] = str(HERE)
    return {**env, **extra}


@dataclass
class Server:
    """A running server: ``base`` URL, the store URL, a token per principal."""

    base: str
    store_url: str
    tokens: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path
    tokens_file: Path | None = None
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, who: str | None = "alice", **kwargs: object) -> httpx.Client:
        """A client sending ``who``'s token (None: no token)."""
        headers = {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}
        client = httpx.Client(base_url=self.base, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]
        self.clients.append(client)
        return client

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        stop(self.process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/me", timeout=10).status_code < 500
    except httpx.TransportError:
        return False


def wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll a real endpoint (``GET /me``: the app, built with its store, answers it, whatever
    the status) until the server answers or its process exits. No deadline of its own: a
    server that starts slowly (a busy machine, several workers) is waited for, and pytest's
    timeout guards a hang, which then shows the server's log."""
    try:
        while process.poll() is None and not _answers(base):
            time.sleep(0.05)
    except BaseException as stopped:  # pytest's timeout, ^C: say what the server logged
        stop(process)
        stopped.add_note(f"the server's log:\n{log.read_text(errors='replace')[-5000:]}")
        raise
    if process.poll() is not None:
        raise RuntimeError(f"the server exited ({process.returncode}):\n{log.read_text()}")


def spawn(
    args: Sequence[str], tmp: Path, port: int, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(args), cwd=tmp, env=env or clean_env(), stdout=out, stderr=subprocess.STDOUT
        )
    wait_ready(f"http://127.0.0.1:{port}", process, log)
    return process, log


def write_tokens(tmp: Path) -> tuple[Path, dict[str, str]]:
    tokens, lines = {}, []
    for who, role in [*((u, f"user:{u}") for u in USERS), ("admin", "admin")]:
        tokens[who], line = new_token(role)
        lines.append(line)
    path = tmp / "tokens.txt"
    path.write_text("# the tests' principals\n" + "\n".join(lines) + "\n")
    return path, tokens


def start(
    store_url: str,
    tmp: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    tokens_of: Server | None = None,
) -> Server:
    """``convostore-server --url store_url`` with a token for alice, bob and an admin (those
    of ``tokens_of``, when given)."""
    if tokens_of is not None and tokens_of.tokens_file is not None:
        tokens_file, tokens = tokens_of.tokens_file, tokens_of.tokens
    else:
        tokens_file, tokens = write_tokens(tmp)
    port = free_port()
    args = [str(BIN / "convostore-server"), "--url", store_url, "--port", str(port)]
    process, log = spawn([*args, "--tokens", str(tokens_file), *extra], tmp, port, env)
    return Server(f"http://127.0.0.1:{port}", store_url, tokens, process, log, tokens_file)


def start_factory(factory: str, store_url: str, tmp: Path, **more_env: str) -> Server:
    """uvicorn serving ``custom_apps:<factory>`` (an app built with create_app's options);
    ``more_env``: more environment variables for it."""
    tokens_file, tokens = write_tokens(tmp)
    port = free_port()
    env = clean_env(
        CONVOSTORE_URL=store_url, CONVOSTORE_SERVER_TOKENS_FILE=str(tokens_file), **more_env
    )
    args = [str(BIN / "uvicorn"), "--factory", f"custom_apps:{factory}", "--port", str(port)]
    process, log = spawn(args, tmp, port, env)
    return Server(f"http://127.0.0.1:{port}", store_url, tokens, process, log)


def pg_unreachable() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3):
            return None
    except Exception as exc:  # any failure means: not reachable here
        return str(exc)


@contextlib.contextmanager
def pg_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards (like the
    root conftest's ``pg_schema_url``, for fixtures wider than one test)."""
    error = pg_unreachable()
    if error is not None:
        message = f"PostgreSQL unreachable at {PG_URL} ({error})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@contextlib.contextmanager
def store_url(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'store.db'}"
    else:
        with pg_schema() as url:
            yield url


def new_id(prefix: str = "c") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class EventStream:
    """An SSE subscription read on a thread of its own (an asyncio loop, so ``close`` can
    cancel the read): ``next()`` gives what arrives as dicts (``event``, ``id``, ``data``
    decoded from JSON; ``{"comment": ...}``, ``{"retry": ...}``; ``{"error": body}`` for a
    refused subscription, then ``{"closed": True}``)."""

    def __init__(self, server: Server, path: str, who: str = "alice", **headers: str) -> None:
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.status: int | None = None
        self.ready = threading.Event()
        auth = {"Authorization": f"Bearer {server.tokens[who]}"} if who else {}
        self._headers = {**auth, **headers}
        self._base, self._path = server.base, path
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self.ready.wait(30)

    def _run(self) -> None:
        self._task = self._loop.create_task(self._read())
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._task)
        self._loop.close()

    async def _read(self) -> None:
        try:
            async with (
                httpx.AsyncClient(base_url=self._base, headers=self._headers) as client,
                client.stream("GET", self._path, timeout=httpx.Timeout(30, read=None)) as r,
            ):
                self.status = r.status_code
                self.ready.set()
                if r.status_code != 200:
                    self.queue.put({"error": json.loads(await r.aread())})
                    return
                event: dict[str, Any] = {}
                async for line in r.aiter_lines():
                    if line.startswith(":"):
                        self.queue.put({"comment": line[1:].strip()})
                    elif line:
                        name, _, value = line.partition(":")
                        event[name] = value[1:] if value.startswith(" ") else value
                    elif event:
                        if "data" in event:
                            event["data"] = json.loads(event["data"])
                        self.queue.put(event)
                        event = {}
        except httpx.HTTPError:  # the server ended the stream (shutting down)
            pass
        finally:
            self.ready.set()
            self.queue.put({"closed": True})

    def next(self, timeout: float = 30) -> dict[str, Any]:
        """What arrives next; ``timeout`` only guards against a hang."""
        return self.queue.get(timeout=timeout)

    def next_event(self, timeout: float = 30) -> dict[str, Any]:
        """The next event that is not a comment or a bare ``retry:``."""
        while set(item := self.next(timeout)) <= {"comment", "retry"}:
            pass
        return item

    def close(self) -> None:
        if self._task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just ended
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(30)


def run_agent(*args: str) -> str:
    """``agent.py`` in another process (the server's environment): a writer that is not the
    server."""
    done = subprocess.run(
        [sys.executable, str(HERE / "agent.py"), *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
