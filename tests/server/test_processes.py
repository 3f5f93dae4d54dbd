"""The server and the agents share one database: what an agent appends in another process
(through the core or the Claude session store) is visible over HTTP at once and the other way
round; two server processes on one PostgreSQL database lose and duplicate nothing; worker
processes that start slowly are waited for, and one that goes is logged with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from served import (
    BIN,
    HERE,
    Server,
    clean_env,
    free_port,
    new_id,
    pg_schema,
    run_agent,
    start,
    stop,
)


def test_an_agent_in_another_process_and_a_client_see_the_same_messages(server: Server) -> None:
    alice, cid = server.client("alice"), new_id()
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "Weather?"})
    run_agent("append", server.store_url, cid, "Sunny, 22C.")  # no user: the agent path
    assert [m["content"] for m in alice.get(f"/conversations/{cid}/messages").json()["items"]] == [
        "Weather?",
        "Sunny, 22C.",
    ]
    alice.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "Thanks"})
    assert json.loads(run_agent("read", server.store_url, cid)) == [
        "Weather?",
        "Sunny, 22C.",
        "Thanks",
    ]
    assert alice.get("/conversations").json()["items"][0]["conversationId"] == cid


def test_an_agents_own_conversation_is_no_users(server: Server) -> None:
    """Written without a user, it is nobody's: to a user it is as a missing one, except that
    a write cannot claim it (409 conversation_ownership), and admins read it."""
    cid = new_id("agent")
    run_agent("append", server.store_url, cid, "internal notes")
    alice = server.client("alice")
    for method, path, body, status in [
        ("GET", f"/conversations/{cid}", None, 404),
        ("POST", f"/conversations/{cid}/messages", {"role": "user", "content": "mine now"}, 409),
        ("PATCH", f"/conversations/{cid}", {"metadata": {"owner": "me"}}, 409),
        ("DELETE", f"/conversations/{cid}", None, 204),  # as a missing one: nothing to delete
    ]:
        response = alice.request(method, path, json=body)
        assert response.status_code == status, (method, path, response.text)
    assert alice.get(f"/conversations/{cid}/messages").json()["items"] == []
    admin = server.client("admin")
    assert admin.get(f"/conversations/{cid}").json()["userId"] is None
    assert [m["content"] for m in admin.get(f"/conversations/{cid}/messages").json()["items"]] == [
        "internal notes"
    ]
    assert cid not in {c["conversationId"] for c in alice.get("/conversations").json()["items"]}


def test_a_claude_session_written_by_the_adapter_is_read_over_http(server: Server) -> None:
    cid = run_agent("claude", server.store_url, "alice")
    assert cid.startswith("claude/")
    alice = server.client("alice")
    listed = {c["conversationId"] for c in alice.get("/conversations").json()["items"]}
    assert cid in listed
    messages = alice.get(f"/conversations/{quote(cid, safe='')}/messages").json()["items"]
    assert [m["messageId"] for m in messages] == ["u-1", "a-1"]
    assert messages[1]["content"]["message"]["content"][0]["text"] == "It explains how to install."
    bob = server.client("bob")  # to bob it is as a missing conversation
    assert bob.get(f"/conversations/{quote(cid, safe='')}").status_code == 404
    assert bob.get(f"/conversations/{quote(cid, safe='')}/messages").json()["items"] == []


def test_two_servers_under_concurrent_posts_lose_and_duplicate_nothing(
    tmp_path: Path,
) -> None:
    with pg_schema() as url:
        first = start(url, tmp_path, "--workers", "2")
        (tmp_path / "second").mkdir()
        second = start(url, tmp_path / "second")
        try:
            cid, writers, each = new_id(), 8, 25
            errors: list[str] = []

            def write(n: int) -> None:
                server = first if n % 2 else second
                with httpx.Client(
                    base_url=server.base,
                    headers={"Authorization": f"Bearer {server.tokens['alice']}"},
                    timeout=60,
                ) as client:
                    for i in range(each):
                        key = {"Idempotency-Key": f"w{n}-{i}"}
                        body = {"role": "user", "content": f"w{n}-{i}"}
                        response = client.post(
                            f"/conversations/{cid}/messages", json=body, headers=key
                        )
                        if response.status_code != 201:
                            errors.append(response.text)
                        if i % 5 == 0:  # a retry of an acknowledged append stores nothing more
                            client.post(f"/conversations/{cid}/messages", json=body, headers=key)

            threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == []
            reader = first.client("alice")
            contents: list[str] = []
            params: dict[str, Any] = {"limit": 100}
            while True:  # the cursors walk every message once
                page = reader.get(f"/conversations/{cid}/messages", params=params).json()
                contents += [m["content"] for m in page["items"]]
                if page["nextCursor"] is None:
                    break
                params = {"limit": 100, "after": page["nextCursor"]}
            expected = {f"w{n}-{i}" for n in range(writers) for i in range(each)}
            assert len(contents) == len(expected) and set(contents) == expected
            meta = second.client("alice").get(f"/conversations/{cid}").json()
            assert meta["messageCount"] == writers * each
            for n in range(writers):  # each writer's appends in its own order
                mine = [c for c in contents if c.startswith(f"w{n}-")]
                assert mine == [f"w{n}-{i}" for i in range(each)]
        finally:
            first.stop()
            second.stop()


def _workers_run_first(tmp_path: Path, code: str) -> dict[str, str]:
    """An environment whose spawned worker processes run ``code`` before anything else (a
    ``sitecustomize``; the supervisor does not run it): a slow, stuck or failing start."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "if '--multiprocessing-fork' in sys.argv:  # a worker, spawned by the supervisor\n"
        f"    {code}\n"
    )
    return clean_env(PYTHONPATH=os.pathsep.join([str(site), str(HERE)]))


def _log_shows(log: Path, text: str, process: subprocess.Popen[bytes]) -> str:
    """The log once it holds ``text`` (the test's timeout guards a hang)."""
    while text not in (content := log.read_text(errors="replace")):
        assert process.poll() is None, content
        time.sleep(0.1)  # polling a file: the server writes it on its own time
    return content


def test_workers_that_start_slowly_are_waited_for(tmp_path: Path) -> None:
    """A worker process that takes 7 s to start (a busy machine) is not killed: uvicorn's
    supervisor killed any that had not answered its health check within 5 s, over and over,
    logging only that it "died"."""
    env = _workers_run_first(tmp_path, "import time; time.sleep(7)")
    server = start(f"sqlite:///{tmp_path / 's.db'}", tmp_path, "--workers", "2", env=env)
    try:
        while server.log_text().count("Application startup complete.") < 2:
            assert server.process.poll() is None, server.log_text()
            time.sleep(0.1)  # polling the log for the second worker's start
        log = server.log_text()
        assert "died" not in log and "replaces it" not in log, log
        assert server.client("alice").get("/me").json()["userId"] == "alice"
    finally:
        server.stop()


def test_a_worker_that_goes_is_logged_with_the_reason(tmp_path: Path) -> None:
    for code, reason in [
        ("import time; time.sleep(3600)", "did not answer the supervisor's health check within 1"),
        ("import os; os._exit(7)", "exited with code 7"),
    ]:
        tmp = tmp_path / str(len(reason))
        tmp.mkdir()
        log = tmp / "server.log"
        args = ["--url", f"sqlite:///{tmp / 's.db'}", "--no-auth", "--port", str(free_port())]
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(BIN / "convostore-server"), *args, "--workers", "2", "--worker-timeout", "1"],
                cwd=tmp,
                env=_workers_run_first(tmp, code),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            text = _log_shows(log, reason, process)
            assert "worker process [" in text and "a new one replaces it" in text
        finally:
            stop(process)
