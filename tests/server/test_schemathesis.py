"""A property-based run of the server's own OpenAPI document (schemathesis) against the live
server: no 5xx, no response outside its documented status codes, content type or schema.

Bounded (examples per operation, a fixed seed) to keep the suite short; the event stream is
left out, since a stream that stays open is its point (tests/server/test_events.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from served import BIN, Server, clean_env


@pytest.mark.parametrize("who", ["alice", "admin"])
def test_the_openapi_document_holds_against_the_live_server(
    server: Server, who: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            str(BIN / "schemathesis"),
            "run",
            f"{server.base}/openapi.json",
            "--header",
            f"Authorization: Bearer {server.tokens[who]}",
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,"
            "response_schema_conformance",
            "--exclude-path-regex",
            "/events$",
            "--max-examples",
            "15",
            "--seed",
            "20261125",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--no-shrink",
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,  # its cache and reports stay out of the checkout
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", done.stdout)
    assert counts and int(counts[1]) == int(counts[2]) > 200, done.stdout[-1500:]
    # every operation but the event stream (and /ui): 29 of the server's own, 8 under /v1
    assert "Tested: 37" in done.stdout


def test_every_operation_has_a_clean_name(server: Server) -> None:
    """Generated clients name their methods after the operation ids: each is a camelCase
    identifier of its own (FastAPI's defaults read get_messages_conversations__..._get)."""
    paths = server.client(None).get("/openapi.json").json()["paths"]
    names = [op["operationId"] for methods in paths.values() for op in methods.values()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch("[a-z][a-zA-Z0-9]*", name) for name in names), names
    assert {
        "getMessages",
        "listConversations",
        "appendMessages",
        "getEvents",
        "getMe",
        "forkConversation",
    } <= set(names)
