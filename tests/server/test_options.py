"""create_app's options and the command's: limits (413, quota), the body bound, CORS, the auth
hook, mounting, running without authentication, the token table, a failing database (503)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from convostore import MemoryValidationError
from convostore_server import Principal, TokenTable, create_app, hash_token, new_token
from served import (
    BIN,
    PG_URL,
    Server,
    clean_env,
    free_port,
    new_id,
    pg_schema,
    start,
    start_factory,
    stop,
    wait_ready,
)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("small")
    running = start_factory("small_limits", f"sqlite:///{tmp / 'small.db'}", tmp)
    yield running
    running.stop()


def _error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    error: dict[str, object] = response.json()["error"]
    assert error["code"] == code
    return error


def test_content_over_the_limit_is_413(small: Server) -> None:
    alice, cid = small.client("alice"), new_id()
    url = f"/conversations/{cid}/messages"
    big = alice.post(url, json={"role": "user", "content": "x" * 1000})
    assert _error(big, 413, "too_large")["argument"] == "content"
    meta = alice.post(url, json={"role": "user", "content": "x", "metadata": {"m": "y" * 600}})
    assert _error(meta, 413, "too_large")["argument"] == "metadata"
    batch = {
        "messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "z" * 999}]
    }
    assert (
        _error(alice.post(url, json=batch), 413, "too_large")["argument"] == "messages[1].content"
    )
    patch = alice.patch(f"/conversations/{cid}", json={"metadata": {"m": "y" * 600}})
    _error(patch, 413, "too_large")
    sid = alice.post("/memory_stores", json={"name": "s"}).json()["memoryStoreId"]
    memory = alice.post(f"/memory_stores/{sid}/memories", json={"path": "a", "content": "m" * 101})
    assert _error(memory, 413, "too_large")["argument"] == "content"
    assert alice.get(url).json()["items"] == []


def test_quotas_have_their_own_code(small: Server) -> None:
    alice, cid = small.client("alice"), new_id()
    url = f"/conversations/{cid}/messages"
    five = {"messages": [{"role": "user", "content": str(i)} for i in range(5)]}
    assert alice.post(url, json=five).status_code == 201
    _error(alice.post(url, json={"role": "user", "content": "sixth"}), 409, "quota_exceeded")
    sid = alice.post("/memory_stores", json={"name": "s"}).json()["memoryStoreId"]
    for path in ("a", "b"):
        alice.post(f"/memory_stores/{sid}/memories", json={"path": path, "content": "x"})
    third = alice.post(f"/memory_stores/{sid}/memories", json={"path": "c", "content": "x"})
    _error(third, 409, "quota_exceeded")


def test_the_body_is_bounded_before_it_is_read(small: Server) -> None:
    """A Content-Length over the bound is answered at once, though the body never comes."""
    port = int(small.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /conversations/c/messages HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + small.tokens["alice"].encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
        )
        received = b""
        while b"\r\n\r\n" not in received or not received.endswith(b"}}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, body = received.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 413"), head
    assert json.loads(body)["error"]["code"] == "too_large"


def test_a_streamed_body_is_cut_at_the_bound(small: Server) -> None:
    sent = []

    def chunks() -> Iterator[bytes]:
        yield b'{"role": "user", "content": "'
        for _ in range(100):
            sent.append(1)
            yield b"x" * 1024
        yield b'"}'

    response = small.client("alice").post(
        f"/conversations/{new_id()}/messages",
        content=chunks(),
        headers={"content-type": "application/json"},
    )
    _error(response, 413, "too_large")


def test_cors_allows_the_configured_origin_only(small: Server) -> None:
    anonymous = small.client(None)
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    }
    ok = anonymous.options("/conversations", headers={"Origin": "https://app.example", **preflight})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    other = anonymous.options(
        "/conversations", headers={"Origin": "https://evil.example", **preflight}
    )
    assert "access-control-allow-origin" not in other.headers
    read = small.client("alice").get("/conversations", headers={"Origin": "https://app.example"})
    assert read.headers["access-control-allow-origin"] == "https://app.example"


def test_cors_credentials_for_any_origin_are_refused_at_start_up() -> None:
    """``*`` with credentials would let any site read a signed-in user's data (Starlette
    reflects the origin); the CORS specification forbids the pair, so does create_app."""
    for origins in (["*"], ["https://app.example", "*"]):
        with pytest.raises(MemoryValidationError, match="cors_credentials") as refused:
            create_app("memory://", cors_origins=origins, cors_credentials=True)
        assert refused.value.argument == "cors_origins"
    create_app("memory://", cors_origins=["*"])  # without credentials: any origin may read
    create_app("memory://", cors_origins=["https://app.example"], cors_credentials=True)


def test_an_auth_hook_plugs_in_the_apps_own_sessions(tmp_path: Path) -> None:
    server = start_factory("cookie_auth", f"sqlite:///{tmp_path / 'c.db'}", tmp_path)
    try:
        alice = httpx.Client(base_url=server.base, cookies={"session": "s-alice"})
        cid = new_id()
        alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "hi"})
        assert alice.get(f"/conversations/{cid}").json()["userId"] == "alice"
        admin = httpx.Client(base_url=server.base, cookies={"session": "s-admin"})
        assert admin.get("/conversations").json()["items"][0]["conversationId"] == cid
        nobody = httpx.Client(base_url=server.base, cookies={"session": "forged"})
        _error(nobody.get("/conversations"), 401, "unauthenticated")
        bearer = server.client("alice")  # the token table is not used with a hook
        _error(bearer.get("/conversations"), 401, "unauthenticated")
        for client in (alice, admin, nobody):
            client.close()
    finally:
        server.stop()


def test_the_app_mounts_inside_another(tmp_path: Path) -> None:
    server = start_factory("mounted", f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    try:
        alice = server.client("alice")
        assert alice.get("/health").json() == {"status": "ok"}
        cid = "a/b"
        posted = alice.post(
            "/api/conversations/a%2Fb/messages", json={"role": "user", "content": "x"}
        )
        assert posted.status_code == 201, posted.text
        assert alice.get("/api/conversations/a%2Fb").json()["conversationId"] == cid
        assert alice.get("/api/openapi.json").json()["info"]["title"] == "convostore-server"
        _error(server.client(None).get("/api/conversations"), 401, "unauthenticated")
    finally:
        server.stop()


def test_a_failing_database_is_503_not_500(tmp_path: Path) -> None:
    import psycopg

    with pg_schema() as url:
        server = start(url, tmp_path)
        try:
            alice = server.client("alice")
            cid = new_id()
            assert (
                alice.post(
                    f"/conversations/{cid}/messages", json={"role": "user", "content": "x"}
                ).status_code
                == 201
            )
            schema = url.rsplit("search_path%3D", 1)[1]
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
            failed = alice.get(f"/conversations/{cid}/messages")
            error = _error(failed, 503, "storage_unavailable")
            assert failed.headers["retry-after"] == "1"
            assert "relation" not in str(error["message"])  # the cause is logged, not sent
        finally:
            server.stop()
        assert "storage error on GET" in server.log_text()


# -- running without authentication ------------------------------------------------------------


def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.0.2.1", "::"):
        done = subprocess.run(
            [str(BIN / "convostore-server"), "--no-auth", "--host", host, "--url", "memory://"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=clean_env(),
            timeout=60,
            check=False,
        )
        assert done.returncode != 0 and "--no-auth is refused" in done.stderr


def test_no_auth_on_loopback_serves_every_caller_as_admin(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(BIN / "convostore-server"), "--no-auth", "--port", str(port)],
            cwd=tmp_path,
            env=clean_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_ready(f"http://127.0.0.1:{port}", process, log)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}")
        posted = client.post("/conversations/c/messages", json={"role": "user", "content": "x"})
        assert posted.status_code == 201
        assert client.get("/conversations").json()["items"][0]["userId"] is None
        client.close()
    finally:
        stop(process)
    # No URL: the core's default, ./convostore.db in the working directory.
    assert (tmp_path / "convostore.db").exists()


@pytest.mark.anyio
async def test_no_auth_refuses_clients_off_loopback() -> None:
    app = create_app("memory://", auth=False)
    for client, status in (
        (("127.0.0.1", 5000), 200),
        (("::1", 5000), 200),
        (("192.0.2.7", 5000), 403),
    ):
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.get("/conversations")
            assert response.status_code == status, response.text


# -- the token table ---------------------------------------------------------------------------


def test_token_table_lines() -> None:
    token, line = new_token("user:u_1")
    assert line == f"{hash_token(token)} user u_1" and token not in line
    _, admin_line = new_token("admin")
    digest, role = admin_line.split(" ", 1)
    table = TokenTable.parse(f"# comment\n\n{line}\n{digest.upper()} {role}\n")
    assert [p for _, p in table.entries] == [Principal(user_id="u_1"), Principal(admin=True)]
    for bad in ("abc user u", f"{'0' * 64} owner", f"{'0' * 64} user", f"{'g' * 64} admin"):
        with pytest.raises(ValueError, match="line 1"):
            TokenTable.parse(bad)
    with pytest.raises(ValueError, match="role must be"):
        new_token("root")
    with pytest.raises(ValueError, match="either a user"):
        Principal()
    with pytest.raises(ValueError, match="either a user"):
        Principal(user_id="u", admin=True)


def test_the_command_refuses_a_malformed_tokens_file(tmp_path: Path) -> None:
    (tmp_path / "tokens.txt").write_text("not-a-hash user alice\n")
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--tokens", "tokens.txt", "--url", "memory://"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "line 1: not a SHA-256" in done.stderr


def test_new_token_prints_a_token_and_its_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "convostore-server"), "--new-token", "user:u_9"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    token = done.stdout.splitlines()[0].rsplit(" ", 1)[1]
    assert done.stdout.splitlines()[1].endswith(f"{hash_token(token)} user u_9")
