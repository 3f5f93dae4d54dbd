"""The floor of benchmarks/server_bench.py: a minimal FastAPI app, served by the same uvicorn,
that runs the equivalent raw SQL on convostore's tables with no auth, no validation and no
store in between: the least an HTTP endpoint over this data can cost.

    uvicorn --factory server_floor:floor_app    (CONVOSTORE_URL names the database)
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

READ = (
    "SELECT id, role, content, metadata, created_at, updated_at FROM convostore_messages"
    " WHERE conversation_id = {p} ORDER BY seq LIMIT {p}"
)
LOCK = (
    "SELECT next_seq, message_count, last_message_at FROM convostore_conversations"
    " WHERE id = {p}{lock}"
)
INSERT = (
    "INSERT INTO convostore_messages"
    " (conversation_id, seq, id, role, content, metadata, created_at, updated_at)"
    " VALUES ({p}, {p}, {p}, {p}, {p}, NULL, {p}, NULL)"
)
UPDATE = (
    "UPDATE convostore_conversations SET next_seq = {p}, message_count = {p},"
    " last_message_at = {p} WHERE id = {p}"
)


def _page(rows: list[Any], limit: int) -> bytes:
    """The server's page shape: the first ``limit`` rows (one more was read: are there
    more?) and the cursor of the next page."""
    items = [
        {
            "messageId": r[0],
            "role": r[1],
            "content": json.loads(r[2]),
            "createdAt": r[4],
            "metadata": None if r[3] is None else json.loads(r[3]),
            "updatedAt": r[5],
        }
        for r in rows[:limit]
    ]
    more = len(rows) > limit
    return json.dumps(
        {
            "items": items,
            "nextCursor": items[-1]["messageId"] if more else None,
            "previousCursor": None,
        }
    ).encode()


def _sqlite(path: str) -> tuple[Callable[[str, int], list[Any]], Callable[..., str]]:
    local = threading.local()

    def conn() -> sqlite3.Connection:
        if not hasattr(local, "conn"):
            local.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            local.conn.execute("PRAGMA busy_timeout = 60000")
            local.conn.execute("PRAGMA synchronous = NORMAL")
        return local.conn  # type: ignore[no-any-return]

    def read(cid: str, limit: int) -> list[Any]:
        return conn().execute(READ.format(p="?"), (cid, limit)).fetchall()

    def append(cid: str, role: str, content: str) -> str:
        c, mid, now = conn(), f"msg_{uuid.uuid4().hex}", int(time.time() * 1000)
        c.execute("BEGIN IMMEDIATE")
        try:
            seq, count, last = c.execute(LOCK.format(p="?", lock=""), (cid,)).fetchone()
            c.execute(INSERT.format(p="?"), (cid, seq, mid, role, content, now))
            c.execute(UPDATE.format(p="?"), (seq + 1, count + 1, max(last, now), cid))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return mid

    return read, append


def _postgres(url: str) -> tuple[Callable[[str, int], list[Any]], Callable[..., str]]:
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool(url, min_size=1, max_size=10, open=True)

    def read(cid: str, limit: int) -> list[Any]:
        with pool.connection() as c:
            return c.execute(READ.format(p="%s"), (cid, limit), prepare=False).fetchall()

    def append(cid: str, role: str, content: str) -> str:
        mid, now = f"msg_{uuid.uuid4().hex}", int(time.time() * 1000)
        with pool.connection() as c, c.transaction():
            row = c.execute(LOCK.format(p="%s", lock=" FOR UPDATE"), (cid,)).fetchone()
            assert row is not None
            seq, count, last = row
            c.execute(INSERT.format(p="%s"), (cid, seq, mid, role, content, now))
            c.execute(UPDATE.format(p="%s"), (seq + 1, count + 1, max(last, now), cid))
        return mid

    return read, append


def floor_app() -> FastAPI:
    url = os.environ["CONVOSTORE_URL"]
    read, append = (
        _postgres(url) if url.startswith("postgres") else _sqlite(url[len("sqlite:///") :])
    )
    app = FastAPI()

    @app.get("/conversations/{conversation_id}/messages")
    def get_messages(conversation_id: str, limit: int = 20) -> Response:
        page = _page(read(conversation_id, limit + 1), limit)
        return Response(page, media_type="application/json")

    @app.post("/conversations/{conversation_id}/messages", status_code=201)
    async def post_message(conversation_id: str, request: Request) -> Response:
        body = await request.json()
        content = json.dumps(body["content"])
        mid = await _in_thread(append, conversation_id, body["role"], content)
        return Response(json.dumps({"messageId": mid}), 201, media_type="application/json")

    return app


async def _in_thread(fn: Callable[..., str], *args: Any) -> str:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
