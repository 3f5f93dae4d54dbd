"""Hostile input to the server, beyond the hostile bodies, paths and queries of
``test_conversations.py`` (``test_bad_bodies_...``, ``test_hostile_values_...``) and the
forged cursors of ``test_isolation.py``: user ids in tokens, strangers' bodies, bodies held at
once, request heads too big or too slow; against a real uvicorn."""

from __future__ import annotations

import base64
import json
import select
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from convostore_server import Principal, TokenTable, create_app, hash_token, new_token
from served import BIN, Server, clean_env, free_port, spawn, start, start_factory, stop
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

# User ids as an attacker would pick them: a comment sign, line breaks of every kind (one
# that forges an admin's line), white space at either end, controls, invisible formatting, a
# lone surrogate. The first list is carried exactly, the second refused.
FORGED_ADMIN = "\n" + "0" * 64 + " admin"
CARRIED = ["alice#1", "#alice", "admin", "user", "ünïcødé/ïd", "a%2Fb?c=d", "'\"<>&;"]
REFUSED = [
    "alice" + FORGED_ADMIN,
    "a\rb",
    "a\r\n" + "1" * 64 + " admin",
    "a\u2028b",
    "a\u2029b",
    "a\x85b",
    "a\x0bb",
    "a\x0cb",
    "a\x1cb",
    " alice",
    "alice ",
    "al ice",
    "a\tb",
    "a\u00a0b",
    "a\x00b",
    "a\x1b[31mb",
    "a\u200bb",
    "a\u202eb",
    "\ud800",
    "",
]


@pytest.mark.parametrize("user_id", CARRIED)
def test_a_new_tokens_line_reads_back_as_exactly_its_user(user_id: str) -> None:
    """The line ``new_token`` prints is one line that the table reads back as that user and
    no one else."""
    token, line = new_token(f"user:{user_id}")
    table = TokenTable.parse(f"# header\n{line}\n")
    assert [p for _, p in table.entries] == [Principal(user_id=user_id)]
    assert table.entries[0][0] == hash_token(token)


@pytest.mark.parametrize("user_id", REFUSED)
def test_a_user_id_a_line_cannot_carry_is_refused_before_any_token(user_id: str) -> None:
    with pytest.raises(ValueError, match="user id in the tokens file"):
        new_token(f"user:{user_id}")


def test_a_user_id_holding_hash_authenticates_as_itself(tmp_path: Path) -> None:
    """``--new-token 'user:alice#1'``: its token is alice#1's (it once was alice's)."""
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--new-token", "user:alice#1"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    token = done.stdout.splitlines()[0].rsplit(" ", 1)[1]
    line = done.stdout.splitlines()[1].split(": ", 1)[1]
    (tmp_path / "tokens.txt").write_text(line + "\n")
    port = free_port()
    args = [str(BIN / "convostore-server"), "--url", f"sqlite:///{tmp_path / 's.db'}"]
    process, _ = spawn(
        [*args, "--port", str(port), "--tokens", str(tmp_path / "tokens.txt")], tmp_path, port
    )
    try:
        me = httpx.get(f"http://127.0.0.1:{port}/me", headers={"Authorization": f"Bearer {token}"})
        assert me.json() == {"userId": "alice#1", "admin": False}
    finally:
        stop(process)


def test_a_user_id_with_a_line_break_mints_no_admin() -> None:
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--new-token", "user:alice" + FORGED_ADMIN],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "user id" in done.stderr and "white space" in done.stderr


GOOD = hash_token("t")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"{GOOD} user alice # laptop", 1),  # no comment after an entry
        (f"# ok\n{GOOD}  admin", 2),  # one space between fields
        (f"\n{GOOD} admin ", 2),  # nothing after the role
        (f"{GOOD} admin\n{GOOD}\tuser bob", 2),
        (f"{GOOD} user ", 1),  # no user id
        (f"{GOOD} user a\x0bb", 1),
        (f"{GOOD} user a\u2028{GOOD} admin", 1),
        (f"{GOOD} user a\x85b", 1),
        (f"{GOOD} users bob", 1),
        (f"{GOOD} ADMIN", 1),
        (f"{GOOD[:-1]} admin", 1),
        (f"{GOOD}0 admin", 1),
        (f" {GOOD} admin", 1),
        (f"{GOOD} user bob\r\n{GOOD} user a\rb\r\n", 2),
    ],
)
def test_a_malformed_tokens_line_is_refused_with_its_number(text: str, line: int) -> None:
    with pytest.raises(ValueError, match=f"^tokens, line {line}: "):
        TokenTable.parse(text)


def test_blank_and_comment_lines_and_windows_line_ends() -> None:
    text = f"# tokens\r\n\r\n   \r\n  # indented comment\r\n{GOOD} user bob\r\n{GOOD.upper()} admin"
    table = TokenTable.parse(text)
    assert [p for _, p in table.entries] == [Principal(user_id="bob"), Principal(admin=True)]
    assert {d for d, _ in table.entries} == {GOOD}


# -- requests as raw bytes ---------------------------------------------------------------------


def _connect(server: Server) -> socket.socket:
    port = int(server.base.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)  # 60 s: a hang guard
    return sock


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The next response on ``sock``: status, headers (lower-case names), body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside a response body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def _answered(sock: socket.socket) -> bool:
    """Whether the server has sent something (or closed), without waiting for it."""
    return bool(select.select([sock], [], [], 0)[0])


def _closed(sock: socket.socket) -> bool:
    return sock.recv(1) == b""


def test_a_strangers_body_is_never_read(server: Server) -> None:
    """No token, or a wrong one: the answer comes from the request's head alone, though the
    body it announces (100 MB, or chunked without end) never comes, and the connection
    closes; the server read none of it."""
    for credentials in (b"", b"Authorization: Bearer not-a-token\r\n"):
        for framing in (b"Content-Length: 100000000\r\n", b"Transfer-Encoding: chunked\r\n"):
            with _connect(server) as sock:
                sock.sendall(
                    b"POST /conversations/c/messages HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Type: application/json\r\n" + credentials + framing + b"\r\n"
                )
                status, headers, body = _response(sock)
                assert status == 401 and headers["connection"] == "close"
                assert headers["www-authenticate"] == "Bearer"
                assert json.loads(body)["error"]["code"] == "unauthenticated"
                assert _closed(sock)
    assert server.client("alice").get("/me").status_code == 200


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tight")
    running = start_factory("tight_budget", f"sqlite:///{tmp / 'tight.db'}", tmp)
    yield running
    running.stop()


def _held_post(server: Server, size: int) -> socket.socket:
    """A POST announcing ``size`` bytes whose body is not sent yet, once the server waits for
    it (``100 Continue``: it took the request, and reserved its body's bytes)."""
    sock = _connect(server)
    sock.sendall(
        b"POST /conversations/budget/messages HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer " + server.tokens["alice"].encode() + b"\r\n"
        b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
        b"Content-Length: " + str(size).encode() + b"\r\n\r\n"
    )
    assert _response(sock)[0] == 100
    return sock


def _body(size: int) -> bytes:
    text = b'{"role": "user", "content": "'
    return text + b"x" * (size - len(text) - 2) + b'"}'


def test_the_bodies_held_at_once_are_bounded(tight: Server) -> None:
    """Three requests of 1,000 bytes hold the 3,000 the server takes at once: a fourth is 503
    before its body is read; once one is answered, there is room again."""
    held = [_held_post(tight, 1000) for _ in range(3)]
    try:
        with _connect(tight) as sock:
            sock.sendall(
                b"POST /conversations/budget/messages HTTP/1.1\r\nHost: x\r\n"
                b"Authorization: Bearer " + tight.tokens["alice"].encode() + b"\r\n"
                b"Content-Type: application/json\r\nContent-Length: 10\r\n\r\n"
            )
            status, headers, body = _response(sock)
            assert (status, headers["retry-after"]) == (503, "1")
            assert json.loads(body)["error"]["code"] == "overloaded"
        assert tight.client("alice").get("/me").status_code == 200  # no body: no bytes held
        held[0].sendall(_body(1000))
        assert _response(held[0])[0] == 201
        posted = tight.client("alice").post(
            "/conversations/budget/messages",
            content=_body(900),
            headers={"content-type": "application/json"},
        )
        assert posted.status_code == 201, posted.text
    finally:
        for sock in held:
            sock.close()
    # the closed ones gave their bytes back: three fit again
    for sock in [_held_post(tight, 1000) for _ in range(3)]:
        sock.close()


def test_a_request_head_over_the_bound_is_431(server: Server) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /me HTTP/1.1\r\nHost: x\r\nX-Filler: ")
        for _ in range(16):  # one header without end, 4 KB at a time, past the bound (64 KB)
            sock.sendall(b"a" * 4096)
            if _answered(sock):
                break
        status, headers, body = _response(sock)
        assert (status, headers["connection"]) == (431, "close")
        assert json.loads(body)["error"]["code"] == "too_large"
        assert _closed(sock)
    with _connect(server) as sock:  # a whole head (a long URL) over the bound, in one send
        sock.sendall(b"GET /conversations/" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(sock)[0] == 431


def test_half_sent_requests_are_closed_after_the_header_timeout(tmp_path: Path) -> None:
    """200 connections sending half a request head, and one sending nothing: each is answered
    408 and closed once the head timeout (1 s here) has passed; the server serves on."""
    server = start(f"sqlite:///{tmp_path / 's.db'}", tmp_path, "--header-timeout", "1")
    try:
        idle = _connect(server)
        slow = []
        for _ in range(200):
            sock = _connect(server)
            sock.sendall(b"GET /me HTTP/1.1\r\nHost: x\r\nAuthoriz")
            slow.append(sock)
        for sock in [idle, *slow]:
            status, headers, body = _response(sock)
            assert (status, headers["connection"]) == (408, "close")
            assert json.loads(body)["error"]["code"] == "request_timeout"
            assert _closed(sock)
            sock.close()
        assert server.client("alice").get("/me").status_code == 200
    finally:
        server.stop()


# -- without authentication, the socket's peer decides -------------------------------------


@pytest.mark.anyio
async def test_no_auth_judges_the_peer_never_a_forwarded_header() -> None:
    """Under a uvicorn that trusts forwarded headers (its ProxyHeadersMiddleware, as
    ``--forwarded-allow-ips '*'`` installs it), a remote client claiming 127.0.0.1 is refused,
    and so is any request that came through a proxy: without authentication only a local
    client talking to the server itself is served."""
    app = ProxyHeadersMiddleware(create_app("memory://", auth=False), trusted_hosts="*")
    for peer, headers, status in [
        ("192.0.2.7", {"X-Forwarded-For": "127.0.0.1"}, 403),
        ("192.0.2.7", {"X-Forwarded-For": "::1"}, 403),
        ("127.0.0.1", {"X-Forwarded-For": "127.0.0.1"}, 403),
        ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, 403),
        ("127.0.0.1", {"Forwarded": "for=127.0.0.1"}, 403),
        ("127.0.0.1", {"X-Real-IP": "127.0.0.1"}, 403),
        ("192.0.2.7", {}, 403),
        ("127.0.0.1", {}, 200),
    ]:
        transport = httpx.ASGITransport(app=app, client=(peer, 5000))  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.get("/me", headers=headers)
            assert response.status_code == status, (peer, headers, response.text)
            if status == 403:
                assert response.json()["error"]["code"] == "forbidden"


# -- search queries ----------------------------------------------------------------------------

# Raw query strings (as sent, percent-encoded) and what the 400 names about them.
HOSTILE_QUERIES = [
    ("a%00b", "NUL"),
    ("%ED%A0%80", "lone surrogate"),  # a lone surrogate as UTF-8 would write it
    ("ab%FF", "lone surrogate"),  # a byte that is no UTF-8 at all
    ("%EF%BF%BF", "U+FFFF"),  # what the index writes for those: no query may hold it
    ("x" * 1001, "1001 characters"),
    ("+".join(["ab"] * 17), "17 terms"),
    ("%20%20%22%22", "no terms"),
]


@pytest.fixture
def secrets_of_alice(server: Server) -> dict[str, str]:
    """A conversation and a memory store of alice's, each holding a secret."""
    alice, secret = server.client("alice"), f"secret-{uuid.uuid4().hex}"
    cid = f"hostile-{uuid.uuid4().hex[:8]}"
    body = {"messages": [{"role": "user", "content": f"{secret} {n}"} for n in range(3)]}
    assert alice.post(f"/conversations/{cid}/messages", json=body).status_code == 201
    sid = alice.post("/memory_stores", json={"name": "hostile"}).json()["memoryStoreId"]
    for n in range(3):
        entry = {"path": f"notes/{n}.md", "content": secret}
        assert alice.post(f"/memory_stores/{sid}/memories", json=entry).status_code == 201
    return {"cid": cid, "sid": sid, "secret": secret}


@pytest.mark.parametrize(("raw", "words"), HOSTILE_QUERIES)
def test_hostile_search_queries_are_400s_naming_q(
    server: Server, secrets_of_alice: dict[str, str], raw: str, words: str
) -> None:
    """On both searches, for their owner and for another user: a 400 naming ``q`` and what
    is wrong with it, before anything is read (nothing of alice's in the answer)."""
    sid = secrets_of_alice["sid"]
    for who in ("alice", "bob"):
        client = server.client(who)
        for path in ("/search/messages", f"/memory_stores/{sid}/search"):
            response = client.get(f"{path}?q={raw}")
            assert response.status_code == 400, (who, path, response.text)
            error = response.json()["error"]
            assert error["code"] == "invalid_argument" and error["argument"] == "q"
            assert words in error["message"], error
            assert secrets_of_alice["secret"] not in response.text


def _cursor(*parts: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


def test_forged_search_cursors_reach_nothing_of_another_users(
    server: Server, secrets_of_alice: dict[str, str]
) -> None:
    """Alice's own cursors, cursors naming her conversation or paths, damaged ones: bob gets
    his own hits or a 400 naming ``after``, never a trace of hers."""
    alice, bob, secret = server.client("alice"), server.client("bob"), secrets_of_alice["secret"]
    first = alice.get("/search/messages", params={"q": secret, "limit": 1}).json()
    hit = first["items"][0]
    bobs = f"bob-{uuid.uuid4().hex[:8]}"
    bob.post(f"/conversations/{bobs}/messages", json={"role": "user", "content": secret})
    forged = [
        first["nextCursor"],
        _cursor(hit["message"]["createdAt"] + 1, secrets_of_alice["cid"], 99),
        _cursor(2**62, "zzz", 0),
        _cursor(0, "", 0),
        _cursor(-1, secrets_of_alice["cid"], -1),
        _cursor("1", 2, 3),
        _cursor(1, 2),
        "not-a-cursor",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "A" * 5000,
    ]
    for cursor in forged:
        response = bob.get("/search/messages", params={"q": secret, "after": cursor})
        assert response.status_code in (200, 400), response.text
        if response.status_code == 400:
            assert response.json()["error"]["argument"] == "after"
        else:
            assert {h["conversationId"] for h in response.json()["items"]} <= {bobs}
        assert secrets_of_alice["cid"] not in response.text.replace(cursor, "")

    sid = bob.post("/memory_stores", json={"name": "bobs"}).json()["memoryStoreId"]
    bob.post(f"/memory_stores/{sid}/memories", json={"path": "notes/9.md", "content": secret})
    path = f"/memory_stores/{secrets_of_alice['sid']}/search"
    theirs = alice.get(path, params={"q": secret, "limit": 1}).json()["nextCursor"]
    for cursor in [theirs, _cursor("notes/0.md"), "not-a-cursor", "A" * 5000]:
        response = bob.get(f"/memory_stores/{sid}/search", params={"q": secret, "after": cursor})
        assert response.status_code in (200, 400), response.text
        if response.status_code == 400:
            assert response.json()["error"]["argument"] == "after"
        else:
            assert [h["path"] for h in response.json()["items"]] in ([], ["notes/9.md"])


def test_another_users_ids_in_a_search_answer_as_missing_ones(
    server: Server, secrets_of_alice: dict[str, str]
) -> None:
    bob, secret = server.client("bob"), secrets_of_alice["secret"]
    for cid in (secrets_of_alice["cid"], f"missing-{uuid.uuid4().hex[:8]}"):
        response = bob.get("/search/messages", params={"q": secret, "conversationId": cid})
        assert response.json() == {"items": [], "nextCursor": None}
    theirs = bob.get(f"/memory_stores/{secrets_of_alice['sid']}/search", params={"q": secret})
    fake = "memstore_" + "0" * 32
    missing = bob.get(f"/memory_stores/{fake}/search", params={"q": secret})
    assert theirs.status_code == missing.status_code == 404
    assert theirs.content == missing.content.replace(
        fake.encode(), secrets_of_alice["sid"].encode()
    )


# -- the OpenAI Conversations API (/v1) ------------------------------------------------------


def _openai_error(response: httpx.Response, status: int, param: str | None) -> dict[str, object]:
    """The OpenAI-shaped error ``response`` must be, naming ``param``."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param, error
    return dict(error)


def _alices_conversations(server: Server) -> list[str]:
    page = server.client("alice").get("/conversations", params={"limit": 100}).json()
    return [c["conversationId"] for c in page["items"]]


V1_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
V1_BAD_BODIES = [
    ({"items": [V1_ITEM] * 21}, "items"),
    ({"items": ["not an item"]}, "items.0"),
    ({"items": [V1_ITEM, {**V1_ITEM, "id": 5}]}, "items[1].id"),
    ({"items": [{**V1_ITEM, "id": "a\x00b"}]}, "items[0].id"),
    ({"items": [{**V1_ITEM, "id": "x" * 257}]}, "items[0].id"),
    ({"items": [V1_ITEM, {**V1_ITEM, "id": "same"}, {**V1_ITEM, "id": "same"}]}, None),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"metadata": {"k" * 65: "v"}}, "metadata"),
    ({"metadata": {"k": "v" * 513}}, "metadata"),
    ({"metadata": {"managedBy": "convostore-langgraph"}}, "metadata"),
    ({"metadata": {"k": 5}}, "metadata.k"),
    ({"metadata": {"k": "a\x00b"}, "items": [{**V1_ITEM, "id": "\x00"}]}, "items[0].id"),
    ({"model": "gpt-5"}, "model"),
]


@pytest.mark.parametrize(("body", "param"), V1_BAD_BODIES)
def test_v1_bad_bodies_are_400s_naming_the_field_and_write_nothing(
    server: Server, body: dict[str, object], param: str | None
) -> None:
    http = server.client("alice")
    before = _alices_conversations(server)
    _openai_error(http.post("/v1/conversations", json=body), 400, param)
    if "items" in body:
        conv = http.post("/v1/conversations", json={}).json()["id"]
        refused = http.post(f"/v1/conversations/{conv}/items", json={"items": body["items"]})
        _openai_error(refused, 400, param)
        assert http.get(f"/v1/conversations/{conv}/items").json()["data"] == []
        http.delete(f"/v1/conversations/{conv}")
    assert _alices_conversations(server) == before


def test_v1_items_hold_nul_and_lone_surrogates_exactly(server: Server) -> None:
    """The JSON escapes a client sends (a NUL, a lone surrogate, a huge int) come back as
    sent: stored by the core, answered as escapes."""
    http = server.client("alice")
    raw = b'{"items": [{"type": "message", "role": "user", "x": 100000000000000000000000000000,'
    raw += b' "content": [{"type": "input_text", "text": "a\\u0000b\\ud800c"}]}]}'
    made = http.post("/v1/conversations", content=raw, headers={"Content-Type": "application/json"})
    assert made.status_code == 200, made.text
    item = http.get(f"/v1/conversations/{made.json()['id']}/items").json()["data"][0]
    assert item["content"][0]["text"] == "a\x00b\ud800c" and item["x"] == 10**29


def test_v1_hostile_queries_and_cursors(server: Server) -> None:
    alice, bob = server.client("alice"), server.client("bob")
    conv = alice.post("/v1/conversations", json={"items": [V1_ITEM] * 3}).json()["id"]
    theirs = bob.post("/v1/conversations", json={"items": [V1_ITEM]}).json()["id"]
    their_item = bob.get(f"/v1/conversations/{theirs}/items").json()["data"][0]["id"]
    items = f"/v1/conversations/{conv}/items"
    for limit in ("0", "-1", "101", "1" * 40, "x", "1.5"):
        _openai_error(alice.get(items, params={"limit": limit}), 400, "limit")
    for order in ("asc", "desc"):
        for forged in ("msg_forged", their_item, "a\x00b", "x" * 300):
            answer = alice.get(items, params={"after": forged, "order": order})
            assert _openai_error(answer, 400, "after")["message"].startswith("after")
        # a lone surrogate's bytes, and bytes that are no UTF-8
        for raw in ("%ED%B2%80", "%FF"):
            _openai_error(alice.get(f"{items}?order={order}&after={raw}"), 400, "after")
    # Another user's conversation answers as a missing one, cursor or not.
    missing = _openai_error(bob.get(items, params={"after": "msg_forged"}), 404, None)
    assert missing["message"] == f"conversation {conv!r} not found"
    # Their item id in my conversation is no item of mine.
    _openai_error(alice.get(f"{items}/{their_item}"), 404, None)
    _openai_error(alice.delete(f"{items}/{their_item}"), 404, None)
    assert bob.get(f"/v1/conversations/{theirs}/items/{their_item}").status_code == 200
    _openai_error(alice.get("/v1/conversations/a%00b"), 400, "conversation_id")


def test_v1_deep_nesting_and_strangers_get_openai_errors(server: Server) -> None:
    http = server.client("alice")
    deep = b'{"items": [{"type": "x", "v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
    answer = http.post(
        "/v1/conversations", content=deep, headers={"Content-Type": "application/json"}
    )
    _openai_error(answer, 400, "body")
    for credentials in (b"", b"Authorization: Bearer not-a-token\r\n"):
        with _connect(server) as sock:
            sock.sendall(
                b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + credentials
                + b"Content-Length: 100000000\r\n\r\n"
            )
            status, headers, body = _response(sock)
            assert status == 401 and headers["connection"] == "close"
            error = json.loads(body)["error"]
            assert (error["type"], error["code"]) == ("authentication_error", "unauthenticated")
            assert _closed(sock)


def test_v1_bodies_over_the_bound_are_413s_in_openais_shape(tight: Server) -> None:
    """Declared over the bound (refused before it is read), or streamed past it (chunked)."""
    http = tight.client("alice")
    conv = http.post("/v1/conversations", json={}).json()["id"]
    big = {"items": [{"type": "message", "role": "user", "content": "x" * 2000}]}
    error = _openai_error(http.post(f"/v1/conversations/{conv}/items", json=big), 413, None)
    assert error["code"] == "too_large"

    def chunks() -> Iterator[bytes]:
        yield json.dumps(big).encode()

    streamed = http.post(
        f"/v1/conversations/{conv}/items",
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert _openai_error(streamed, 413, None)["code"] == "too_large"
    assert http.get(f"/v1/conversations/{conv}/items").json()["data"] == []


@pytest.mark.parametrize(
    "position",
    ["nope", "0/", "/0", "G/1", "1/2/3", "0/" + "F" * 40, "1" * 5000 + "/1", b"\xd9\xa3/1"],
)
def test_a_forged_replica_position_is_a_400_naming_its_header(
    server: Server, position: str | bytes
) -> None:
    """``Convostore-Position`` (read replicas' read-your-writes) is checked on every server,
    with or without replicas, after authentication."""
    response = server.client("alice").get(
        "/conversations", headers={"Convostore-Position": position}
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["argument"] == "Convostore-Position"
    refused = server.client(None).get("/conversations", headers={"Convostore-Position": position})
    assert refused.status_code == 401


def test_a_well_formed_position_without_replicas_changes_nothing(server: Server) -> None:
    alice = server.client("alice")
    answer = alice.get("/conversations", headers={"Convostore-Position": "0/16B3748"})
    assert answer.status_code == 200
    assert "Convostore-Position" not in answer.headers


def test_hostile_forks_copy_nothing_of_another_users_and_write_nothing(server: Server) -> None:
    """A fork of another user's conversation answers as one of a missing conversation, by
    the same words; a cut at another user's message, a taken id (anyone's: ids are one
    namespace), a ``managedBy`` mark or a bad id write nothing."""
    alice, bob, admin = server.client("alice"), server.client("bob"), server.client("admin")
    cid = f"fork-{uuid.uuid4().hex[:12]}"
    mid = alice.post(
        f"/conversations/{cid}/messages", json={"role": "user", "content": "secret"}
    ).json()["messageId"]
    own = f"bob-{uuid.uuid4().hex[:12]}"
    bob.post(f"/conversations/{own}/messages", json={"role": "user", "content": "b"})
    missing = f"gone-{uuid.uuid4().hex[:12]}"

    def fork(client: httpx.Client, source: str, body: dict[str, object]) -> httpx.Response:
        return client.post(f"/conversations/{source}/fork", json=body)

    new = f"stolen-{uuid.uuid4().hex[:12]}"
    theirs = fork(bob, cid, {"newConversationId": new, "upTo": mid})
    absent = fork(bob, missing, {"newConversationId": new, "upTo": mid})
    assert theirs.status_code == absent.status_code == 404
    assert theirs.content == absent.content.replace(missing.encode(), cid.encode())
    as_bob = admin.post(f"/conversations/{cid}/fork", params={"userId": "bob"}, json={
        "newConversationId": new
    })  # fmt: skip
    assert as_bob.status_code == 404
    cut = fork(bob, own, {"newConversationId": new, "upTo": mid})  # alice's message
    assert cut.status_code == 400 and cut.json()["error"]["argument"] == "up_to"
    assert "secret" not in cut.text
    taken = fork(bob, own, {"newConversationId": cid})  # alice's id
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "conversation_exists"
    assert "secret" not in taken.text
    for body, status in [
        ({"newConversationId": new, "metadata": {"managedBy": {"component": "x"}}}, 400),
        ({"newConversationId": "a\x00b"}, 400),
        ({"newConversationId": "x" * 10_000}, 400),
        ({"newConversationId": 7}, 422),
        ({"newConversationId": new, "upTo": ["msg_1"]}, 422),
        ({"newConversationId": new, "metadata": []}, 422),
        ({"newConversationId": new, "extra": 1}, 422),
    ]:
        response = fork(bob, own, body)
        assert response.status_code == status, (body, response.text[:300])
    for client in (alice, bob):
        assert client.get(f"/conversations/{new}").status_code == 404  # nothing written
    assert admin.get(f"/conversations/{cid}").json()["messageCount"] == 1
    anonymous = server.client(None)
    assert fork(anonymous, cid, {"newConversationId": new}).status_code == 401
