"""The floor of benchmarks/server_bench.py: the least an authenticated HTTP endpoint over
convostore's tables can cost. A FastAPI app, served by the same uvicorn (one worker), with one
``async`` endpoint a request: the bearer token's SHA-256 compared with the stored one, the
owner read from the conversation's row, the rows read or the message written by hand in as
few statements as the database allows, the JSON decoded and encoded with ``json``. No store,
no validation beyond that, no middleware, no thread hop: SQLite runs on the event loop,
PostgreSQL through psycopg's async pool.

    uvicorn --factory server_floor:floor_app
    (CONVOSTORE_URL names the database; FLOOR_TOKEN is '<sha256 hex> <user_id>')
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

# The owner is read from the conversation's row in the same statement: another user's
# conversation reads as an empty page, as the server answers it.
READ = (
    "SELECT m.id, m.role, m.content, m.metadata, m.created_at, m.updated_at"
    " FROM convostore_conversations c JOIN convostore_messages m ON m.conversation_id = c.id"
    " WHERE c.id = {p} AND c.user_id = {p} ORDER BY m.seq LIMIT {p}"
)
# The conversation's row takes the message (its owner checked, its counters moved) and gives
# the message its position.
CLAIM = (
    "UPDATE convostore_conversations SET next_seq = next_seq + 1,"
    " message_count = message_count + 1, last_message_at = {greatest}(last_message_at, {p})"
    " WHERE id = {p} AND user_id = {p} RETURNING next_seq - 1"
)
INSERT = (
    "INSERT INTO convostore_messages"
    " (conversation_id, seq, id, role, content, metadata, created_at, updated_at{search})"
)
# (SQLite's search index is filled later, not by the append; PostgreSQL's column is.)
SQLITE_APPEND = (
    CLAIM.format(p="?", greatest="MAX"),
    INSERT.format(search="") + " VALUES (?, ?, ?, ?, ?, NULL, ?, NULL)",
)
# PostgreSQL: one statement, one round trip (a data-modifying WITH).
POSTGRES_APPEND = (
    f"WITH claimed(seq) AS ({CLAIM.format(p='%s', greatest='GREATEST')})"
    f" {INSERT.format(search=', search_text')} SELECT %s, seq, %s, %s, %s, NULL, %s, NULL, %s FROM claimed RETURNING id"
)

Read = Callable[[str, str, int], Awaitable[list[Any]]]
Append = Callable[[str, str, str, str, str], Awaitable[bool]]


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


def _sqlite(path: str) -> tuple[Read, Append, Callable[[], Awaitable[None]]]:
    """On the event loop: one connection, statements that take microseconds."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA synchronous = NORMAL")
    read_sql = READ.format(p="?")
    claim, insert = SQLITE_APPEND

    async def read(cid: str, user: str, limit: int) -> list[Any]:
        return conn.execute(read_sql, (cid, user, limit)).fetchall()

    async def append(cid: str, user: str, mid: str, role: str, content: str) -> bool:
        now = int(time.time() * 1000)
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(claim, (now, cid, user)).fetchone()
            if row is not None:
                conn.execute(insert, (cid, row[0], mid, role, content, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return row is not None

    async def close() -> None:
        conn.close()

    return read, append, close


def _postgres(url: str) -> tuple[Read, Append, Callable[[], Awaitable[None]]]:
    """psycopg's async pool, autocommit: each request one statement, one round trip."""
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(
        url, min_size=1, max_size=10, open=False, kwargs={"autocommit": True}
    )
    read_sql = READ.format(p="%s")
    opened = False

    async def ready() -> None:
        nonlocal opened
        if not opened:
            await pool.open()
            opened = True

    async def read(cid: str, user: str, limit: int) -> list[Any]:
        await ready()
        async with pool.connection() as c:
            cur = await c.execute(read_sql, (cid, user, limit))
            return await cur.fetchall()

    async def append(cid: str, user: str, mid: str, role: str, content: str) -> bool:
        await ready()
        now = int(time.time() * 1000)
        async with pool.connection() as c:
            cur = await c.execute(
                POSTGRES_APPEND, (now, cid, user, cid, mid, role, content, now, content)
            )
            return await cur.fetchone() is not None

    async def close() -> None:
        await pool.close()

    return read, append, close


def _principal(token_line: str) -> Callable[[Request], str | None]:
    digest, _, user = token_line.partition(" ")

    def user_of(request: Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        presented = hashlib.sha256(token.encode()).hexdigest()
        return user if hmac.compare_digest(presented, digest) else None

    return user_of


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status, media_type="application/json")


UNAUTHENTICATED = b'{"error":{"code":"unauthenticated"}}'


def floor_app() -> FastAPI:
    url = os.environ["CONVOSTORE_URL"]
    read, append, close = (
        _postgres(url) if url.startswith("postgres") else _sqlite(url[len("sqlite:///") :])
    )
    user_of = _principal(os.environ["FLOOR_TOKEN"])

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/conversations/{conversation_id}/messages")
    async def get_messages(conversation_id: str, request: Request, limit: int = 20) -> Response:
        user = user_of(request)
        if user is None:
            return _json(UNAUTHENTICATED, 401)
        return _json(_page(await read(conversation_id, user, limit + 1), limit))

    @app.post("/conversations/{conversation_id}/messages", status_code=201)
    async def post_message(conversation_id: str, request: Request) -> Response:
        user = user_of(request)
        if user is None:
            return _json(UNAUTHENTICATED, 401)
        body = json.loads(await request.body())
        mid = f"msg_{uuid.uuid4().hex}"
        if not await append(conversation_id, user, mid, body["role"], json.dumps(body["content"])):
            return _json(b'{"error":{"code":"not_found"}}', 404)
        return _json(json.dumps({"messageId": mid}).encode(), 201)

    return app
