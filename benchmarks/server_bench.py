"""convostore-server against the floor: requests per second, the serving process's CPU time
per request and p50/p99 latency of ``GET .../messages?limit=20`` and ``POST .../messages`` at
1, 8 and 32 concurrent clients.

    .venvs/server/bin/python benchmarks/server_bench.py [--seconds 4] [--only sqlite|postgres]

Both apps run under the same uvicorn (one worker, no access log) on the same database; the
floor (benchmarks/server_floor.py) is the leanest authenticated endpoint: async, the token's
SHA-256 compared, the owner checked in the statement, hand-written SQL, ``json``. The load
comes from wrk (or, without it, from this process), on the same 2 cores, each cell in two
halves (floor, server, server, floor), so absolute figures are the machine's; the ratios are
the point, the CPU one the steadier. Then where the time of one request goes, measured in
this process without HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from convostore import AsyncConversationStore, ConversationStore, Message
from convostore_server import TokenTable, new_token
from convostore_server.auth import hash_token
from convostore_server.errors import dump_json
from pydantic import TypeAdapter
from report import markdown_report, pg_schema
from starlette.requests import Request

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
USER = "u_bench"
Run = tuple[int, float, float, float, float]
"""One side of a cell: requests, seconds, p50 ms, p99 ms, the serving process's CPU seconds."""
CONCURRENCY = (1, 8, 32)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PIDS: dict[str, int] = {}
"""The process serving each base URL."""


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def serve(args: list[str], env: dict[str, str]) -> Iterator[str]:
    port = _free_port()
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CONVOSTORE_")}, **env}
    full["PYTHONPATH"] = str(HERE)
    process = subprocess.Popen(
        [*args, "--port", str(port), "--no-access-log", "--log-level", "warning"],
        env=full,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    PIDS[base] = process.pid
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/openapi.json", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(15)


async def load(
    request: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
    base: str,
    headers: dict[str, str],
    clients: int,
    seconds: float,
) -> tuple[int, float, float, float]:
    """``clients`` loops sending requests for ``seconds`` from this process (httpx, asyncio;
    the driver when wrk is missing): (requests, seconds, p50 ms, p99 ms)."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as http:
        for n in range(clients):  # warm the connections
            (await request(http, n)).raise_for_status()
        stop = time.perf_counter() + seconds

        async def client(n: int) -> None:
            i = 0
            while time.perf_counter() < stop:
                start = time.perf_counter()
                response = await request(http, n * 1_000_000 + i)
                latencies.append(time.perf_counter() - start)
                response.raise_for_status()
                i += 1

        began = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        elapsed = time.perf_counter() - began
    cuts = statistics.quantiles(latencies, n=100)
    return len(latencies), elapsed, cuts[49] * 1000, cuts[98] * 1000


WRK_POST = """wrk.method = "POST"
wrk.body = '{"role": "user", "content": "message from wrk"}'
wrk.headers["Content-Type"] = "application/json"
"""
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    number = text.rstrip("usm")
    return float(number) * _UNITS[text[len(number) :]]


def wrk(
    url: str, headers: dict[str, str], post: bool, clients: int, seconds: float
) -> tuple[int, float, float, float]:
    """wrk (one thread, ``clients`` connections) for ``seconds``: (requests, seconds, p50 ms,
    p99 ms); any answer other than 2xx fails the run."""
    args = [
        "wrk",
        "-t1",
        f"-c{clients}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "--timeout",
        "10s",
    ]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        if post:
            script.write(WRK_POST)
            script.flush()
            args += ["-s", script.name]
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk met errors:\n{out}")
    requests = int(re.search(r"(\d+) requests in ([\d.]+)(\w+)", out).group(1))  # type: ignore[union-attr]
    took = re.search(r"requests in ([\d.]+\w+)", out).group(1)  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+\w+)", out).group(1)  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+([\d.]+\w+)", out).group(1)  # type: ignore[union-attr]
    return requests, _ms(took) / 1000, _ms(p50), _ms(p99)


def _seed(url: str, cells: int) -> None:
    with ConversationStore(url) as store:
        store.append_messages(
            conversation_id="read",
            messages=[{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(200)],
            user_id=USER,
        )
        for cell in range(cells):
            store.append_message(
                conversation_id=f"write-{cell}", role="user", content="start", user_id=USER
            )


async def measure(
    base: str, headers: dict[str, str], path: str, post: bool, *, clients: int, seconds: float
) -> Run:
    """One side of a cell, after a request that must succeed: wrk when installed, else the
    httpx driver of this process; with the CPU time the serving process used meanwhile."""
    async with httpx.AsyncClient(base_url=base, headers=headers) as http:
        body = {"role": "user", "content": "warm"}
        sent = http.post(path, json=body) if post else http.get(path)
        (await sent).raise_for_status()

    def request(h: httpx.AsyncClient, i: int) -> Awaitable[httpx.Response]:
        if post:
            return h.post(path, json={"role": "user", "content": f"message {i}"})
        return h.get(path)

    before = cpu_seconds(PIDS[base])
    if shutil.which("wrk"):
        run = await asyncio.to_thread(wrk, base + path, headers, post, clients, seconds)
    else:
        run = await load(request, base, headers, clients, seconds)
    return (*run, cpu_seconds(PIDS[base]) - before)


async def compare(name: str, url: str, seconds: float) -> None:
    cells = len(CONCURRENCY)
    _seed(url, 4 * cells)  # a conversation for each POST run (10,000 messages at most each)
    token, line = new_token(f"user:{USER}")
    tokens = Path(tempfile.mkdtemp()) / "tokens.txt"
    tokens.write_text(line + "\n")
    auth = {"Authorization": f"Bearer {token}"}
    server_cmd = [str(BIN / "convostore-server"), "--url", url, "--tokens", str(tokens)]
    floor_cmd = [str(BIN / "uvicorn"), "--factory", "server_floor:floor_app"]
    floor_env = {"CONVOSTORE_URL": url, "FLOOR_TOKEN": f"{hash_token(token)} {USER}"}
    driver = "wrk, one thread" if shutil.which("wrk") else "httpx in this process"
    print(
        f"\n{name}: requests/s, p50 / p99 ms ({seconds:g} s a side and cell, in two halves"
        f" run floor, server, server, floor; one uvicorn worker each; load from {driver})\n"
    )
    print(
        "| request | clients | floor req/s | server req/s | ratio | floor CPU µs/req"
        " | server CPU µs/req | CPU ratio | floor p50 / p99 | server p50 / p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    cell = iter(range(4 * cells))
    with serve(server_cmd, {}) as server, serve(floor_cmd, floor_env) as floor:
        sides = {"floor": floor, "server": server}
        for label in ("GET messages?limit=20", "POST messages"):
            post = label.startswith("POST")
            for clients in CONCURRENCY:
                runs: dict[str, list[Run]] = {"floor": [], "server": []}
                for side in ("floor", "server", "server", "floor"):
                    path = "/conversations/read/messages?limit=20"
                    if post:
                        path = f"/conversations/write-{next(cell)}/messages"
                    runs[side].append(
                        await measure(
                            sides[side], auth, path, post, clients=clients, seconds=seconds / 2
                        )
                    )
                (frps, f50, f99, fcpu), (srps, s50, s99, scpu) = (
                    _summary(runs[s]) for s in ("floor", "server")
                )
                print(
                    f"| {label} | {clients} | {frps:,.0f} | {srps:,.0f} | {srps / frps:.2f}x"
                    f" | {fcpu:,.0f} | {scpu:,.0f} | {fcpu / scpu:.2f}x"
                    f" | {f50:.2f} / {f99:.2f} | {s50:.2f} / {s99:.2f} |"
                )
        await event_latency(server, auth, url)
    await where_the_time_goes(url)


def _summary(runs: list[Run]) -> tuple[float, float, float, float]:
    """Requests/s over both halves, the halves' p50 and p99 averaged, and the serving
    process's CPU µs a request."""
    requests = sum(r[0] for r in runs)
    return (
        requests / sum(r[1] for r in runs),
        statistics.mean(r[2] for r in runs),
        statistics.mean(r[3] for r in runs),
        sum(r[4] for r in runs) / requests * 1e6,
    )


async def event_latency(server: str, auth: dict[str, str], url: str, appends: int = 30) -> None:
    """An SSE subscriber on the server; this process appends through the core store (the
    server is another process): the time from an append's ``createdAt`` to its event."""
    latencies: list[float] = []
    async with (
        httpx.AsyncClient(base_url=server, headers=auth, timeout=None) as http,
        http.stream("GET", "/conversations/read/events") as stream,
        AsyncConversationStore(url) as store,
    ):
        lines = stream.aiter_lines()
        async for line in lines:
            if line.startswith("retry:"):
                break
        for i in range(appends):
            await store.append_message(conversation_id="read", role="assistant", content=f"e{i}")
            async for line in lines:
                change = json.loads(line[5:]) if line.startswith("data:") else {}
                if (change.get("message") or {}).get("content") == f"e{i}":
                    latencies.append(time.time() * 1000 - change["createdAt"])
                    break
            await asyncio.sleep(0.05)
    cuts = statistics.quantiles(latencies, n=100)
    print(
        f"\nan append by another process reaching an SSE subscriber ({appends} appends):"
        f" p50 {cuts[49]:.0f} ms, p99 {cuts[98]:.0f} ms, max {max(latencies):.0f} ms"
    )


def _per_call_us(fn: Callable[[], object], n: int = 2000) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


async def where_the_time_goes(url: str) -> None:
    """One GET of 20 messages, piece by piece, in this process (no HTTP)."""
    sys.path.insert(0, str(HERE))
    import server_floor

    raw_read, _, close_floor = (
        server_floor._postgres(url)
        if url.startswith("postgres")
        else server_floor._sqlite(url[10:])
    )
    async with AsyncConversationStore(url) as plain:
        strict = AsyncConversationStore(sync=plain.sync.with_strict_ownership())
        loop_n = 500

        async def timed(call: Callable[[], Awaitable[object]]) -> float:
            await call()
            start = time.perf_counter()
            for _ in range(loop_n):
                await call()
            return (time.perf_counter() - start) / loop_n * 1e6

        core_user = await timed(
            lambda: strict.get_messages(conversation_id="read", limit=20, user_id=USER)
        )
        core_agent = await timed(lambda: plain.get_messages(conversation_id="read", limit=20))
        core_sync = _per_call_us(
            lambda: plain.sync.get_messages(conversation_id="read", limit=20), loop_n
        )
        messages = await plain.get_messages(conversation_id="read", limit=20)
        floor_read = await timed(lambda: raw_read("read", USER, 21))
        rows = await raw_read("read", USER, 21)
        await close_floor()
    adapter = TypeAdapter(list[Message])
    token, line = new_token(f"user:{USER}")
    table = TokenTable.parse(line)

    request = Request({"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]})

    pieces = [
        ("the floor's read of 21 rows, owner joined (async)", floor_read),
        ("floor's JSON of the page", _per_call_us(lambda: server_floor._page(rows, 20))),
        ("core get_messages(limit=20), blocking facade", core_sync),
        ("core get_messages(limit=20), async facade", core_agent),
        ("core get_messages(limit=20, user_id), async, strict store", core_user),
        (
            "server's JSON of the page (pydantic, camelCase)",
            _per_call_us(lambda: dump_json(messages, adapter)),
        ),
        ("token check (sha256 + compare_digest, 1 entry)", _per_call_us(lambda: table(request))),
    ]
    print("\nwhere one GET's time goes, measured in this process (µs a call):\n")
    print("| piece | µs |\n|---|---|")
    for label, us in pieces:
        print(f"| {label} | {us:,.1f} |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=4.0,
        help="seconds of load a side and cell (wrk: whole halves)",
    )
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            await compare("SQLite file (WAL)", f"sqlite:///{Path(tmp) / 'bench.db'}", args.seconds)
    if args.only != "sqlite":
        with pg_schema() as url:
            await compare("PostgreSQL 127.0.0.1", url, args.seconds)


if __name__ == "__main__":
    packages = ["convostore-server", "fastapi", "starlette", "uvicorn", "httpx", "psycopg"]
    with markdown_report("convostore-server benchmarks", packages):
        asyncio.run(main())
