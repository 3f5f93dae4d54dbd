"""The OpenAI Conversations API (/v1) against the server's own endpoints: p50/p99 latency of
appending 10 items and of reading a page of 20, one client.

    .venvs/server/bin/python benchmarks/openai_v1_bench.py [--calls 20] [--repeat 15] [--only ...]

One convostore-server (one uvicorn worker, no access log) on the database. Three ways to make
each call: the official ``openai`` client on /v1 (``conversations.items.create`` of 10 items,
``conversations.items.list(limit=20)``), httpx on /v1 (the same requests without the client's
parsing), and httpx on the server's own ``POST .../messages`` (a batch of 10) and
``GET .../messages?limit=20``. The ratio ``openai / own`` is the figure of issue 28 (within
1.2x); ``/v1 / own`` is the server's share of it. The client runs in this process, on the same
cores as the server, the sides taking turns: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from convostore import ConversationStore
from convostore_server import new_token
from openai import AsyncOpenAI
from report import markdown_report, pg_schema
from server_bench import BIN, serve

USER = "u_bench"
PER_CONVERSATION = 200  # appends of 10 to one conversation before the next (quota 10,000)
Call = Callable[[int, int], Awaitable[object]]


def _items(i: int) -> list[dict[str, Any]]:
    return [
        {"type": "message", "role": "user", "content": f"message {i}.{k} " + "x" * 100}
        for k in range(10)
    ]


async def rounds(sides: dict[str, Call], calls: int, repeat: int) -> dict[str, list[float]]:
    """Each side's latencies (ms), one client: ``repeat`` rounds of ``calls`` calls a side,
    the sides taking turns, so that the machine's other load falls on all of them alike."""
    latencies: dict[str, list[float]] = {side: [] for side in sides}
    for call in sides.values():  # warm the connections and the conversations
        await call(0, 0)
    i = 1
    for _ in range(repeat):
        for side, call in sides.items():
            for _ in range(calls):
                start = time.perf_counter()
                await call(0, i)
                latencies[side].append((time.perf_counter() - start) * 1000)
                i += 1
    return latencies


def _seed(url: str) -> None:
    """The conversation read by every side: 200 messages written as items."""
    with ConversationStore(url) as store:
        store.append_messages(
            conversation_id="read",
            messages=[{"role": "user", "content": item} for item in _items(0) * 20],
            user_id=USER,
        )


def _sides(
    base: str, token: str, clients: int, made: dict[str, int]
) -> tuple[dict[str, tuple[Call, Call]], list[Any]]:
    """For each side, the (append 10, read 20) calls; and what to close afterwards."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    auth = {"Authorization": f"Bearer {token}"}
    http = httpx.AsyncClient(base_url=base, headers=auth, limits=limits)
    api = AsyncOpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0)

    def target(side: str, n: int, i: int) -> str:
        """The conversation client ``n``'s ``i``-th append goes to (made on the side's way)."""
        return f"{side}-{made['run']}-{n}-{i // PER_CONVERSATION}"

    async def v1_conversation(side: str, n: int, i: int) -> str:
        key = target(side, n, i)
        if key not in conversations:
            conversations[key] = (await api.conversations.create()).id
        return conversations[key]

    conversations: dict[str, str] = {}

    async def openai_append(n: int, i: int) -> object:
        cid = await v1_conversation("openai", n, i)
        return await api.conversations.items.create(cid, items=_items(i))  # type: ignore[arg-type]

    async def openai_read(n: int, i: int) -> object:
        return await api.conversations.items.list("read", limit=20)

    async def v1_append(n: int, i: int) -> object:
        cid = await v1_conversation("v1", n, i)
        answer = await http.post(f"/v1/conversations/{cid}/items", json={"items": _items(i)})
        return answer.raise_for_status()

    async def v1_read(n: int, i: int) -> object:
        answer = await http.get("/v1/conversations/read/items", params={"limit": 20})
        return answer.raise_for_status()

    async def own_append(n: int, i: int) -> object:
        cid = target("own", n, i)
        batch = [{"role": "user", "content": item} for item in _items(i)]
        answer = await http.post(f"/conversations/{cid}/messages", json={"messages": batch})
        return answer.raise_for_status()

    async def own_read(n: int, i: int) -> object:
        answer = await http.get("/conversations/read/messages", params={"limit": 20})
        return answer.raise_for_status()

    sides = {
        "openai": (openai_append, openai_read),
        "/v1": (v1_append, v1_read),
        "own": (own_append, own_read),
    }
    return sides, [http, api]


def _client_side_ms(n: int = 200) -> float:
    """What the ``openai`` client spends, in this process, turning 10 items into its request
    body (``maybe_transform`` of ``ItemCreateParams``), in ms a call."""
    from openai._utils import maybe_transform
    from openai.types.conversations import item_create_params

    items = _items(0)
    start = time.perf_counter()
    for _ in range(n):
        maybe_transform({"items": items}, item_create_params.ItemCreateParams)
    return (time.perf_counter() - start) / n * 1000


async def compare(name: str, url: str, calls: int, repeat: int) -> None:
    _seed(url)
    token, line = new_token(f"user:{USER}")
    tokens = Path(tempfile.mkdtemp()) / "tokens.txt"
    tokens.write_text(line + "\n")
    print(f"\n{name}: p50 / p99 ms a call, one client, {repeat} rounds of {calls} calls a side\n")
    print("| call | own p50 / p99 | /v1 p50 / p99 | openai p50 / p99 | /v1 / own | openai / own |")
    print("|---|---|---|---|---|---|")
    made = {"run": 0}
    cmd = [str(BIN / "convostore-server"), "--url", url, "--tokens", str(tokens)]
    with serve(cmd, {}) as base:
        for index, label in enumerate(("append 10 items", "read 20 items")):
            made["run"] += 1
            sides, closing = _sides(base, token, 1, made)
            got = await rounds({side: pair[index] for side, pair in sides.items()}, calls, repeat)
            await closing[0].aclose()
            await closing[1].close()
            cells = {}
            for side, ms in got.items():
                cuts = statistics.quantiles(ms, n=100)
                cells[side] = (cuts[49], cuts[98])
            own, v1, api = cells["own"], cells["/v1"], cells["openai"]
            print(
                f"| {label} | {own[0]:.2f} / {own[1]:.2f} | {v1[0]:.2f} / {v1[1]:.2f}"
                f" | {api[0]:.2f} / {api[1]:.2f} | {v1[0] / own[0]:.2f}x | {api[0] / own[0]:.2f}x |"
            )
    print(
        "\nThe ratios are of the p50s. The `openai` client's own work before it sends 10 items"
        f" (its `maybe_transform` of the params) takes {_client_side_ms():.2f} ms in this"
        " process: the server never sees it."
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20, help="calls a side in a round")
    parser.add_argument("--repeat", type=int, default=15, help="rounds")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = f"sqlite:///{Path(tmp) / 'bench.db'}"
            await compare("SQLite file (WAL)", sqlite, args.calls, args.repeat)
    if args.only != "sqlite":
        with pg_schema() as url:
            await compare("PostgreSQL 127.0.0.1", url, args.calls, args.repeat)


if __name__ == "__main__":
    packages = ["convostore-server", "openai", "fastapi", "starlette", "uvicorn", "httpx"]
    with markdown_report("convostore-server: the OpenAI Conversations API (/v1)", packages):
        asyncio.run(main())
