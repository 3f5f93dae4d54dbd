"""The real server's traces and logs: a request's span follows its ``traceparent``, the store's
spans are its children, no id of the path is in them; ``--log-format json`` writes JSON lines
carrying the request id and the trace id; ``X-Request-ID`` is kept when sane, else replaced."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import (
    HERE,
    Server,
    clean_env,
    free_port,
    new_id,
    spawn,
    start_factory,
    stop,
    write_tokens,
)

TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER = "b7ad6b7169203331"


@pytest.fixture
def traced(tmp_path: Path) -> Any:
    """A server on SQLite with the SDK's tracer provider, JSON logs; its spans file."""
    tokens_file, tokens = write_tokens(tmp_path)
    spans = tmp_path / "spans.jsonl"
    port = free_port()
    args = [
        sys.executable,
        str(HERE / "traced_server.py"),
        "--url",
        f"sqlite:///{tmp_path / 'store.db'}",
        "--port",
        str(port),
        "--tokens",
        str(tokens_file),
        "--log-format",
        "json",
    ]
    process, log = spawn(args, tmp_path, port, clean_env(CONVOSTORE_TEST_SPANS=str(spans)))
    server = Server(f"http://127.0.0.1:{port}", "", tokens, process, log, tokens_file)
    yield server, spans
    stop(process)


def _spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_request_follows_its_traceparent_and_the_store_calls_are_its_children(
    traced: tuple[Server, Path],
) -> None:
    server, spans_file = traced
    alice, cid = server.client("alice"), new_id()
    sent = alice.post(
        f"/conversations/{cid}/messages",
        json={"role": "user", "content": "hello"},
        headers={"traceparent": f"00-{TRACE}-{CALLER}-01", "X-Request-ID": "req-123.a:b"},
    )
    assert sent.status_code == 201 and sent.headers["x-request-id"] == "req-123.a:b"
    read = alice.get(f"/conversations/{cid}/messages")
    assert read.status_code == 200
    generated = read.headers["x-request-id"]
    assert re.fullmatch("[0-9a-f]{32}", generated)
    server.stop()
    spans = _spans(spans_file)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    [post] = by_name["POST /conversations/{conversationId}/messages"]
    assert post["context"]["trace_id"] == f"0x{TRACE}" and post["parent_id"] == f"0x{CALLER}"
    assert post["attributes"]["http.route"] == "/conversations/{conversationId}/messages"
    assert post["attributes"]["http.status_code"] == 201
    [append] = by_name["convostore.append_message"]
    assert append["parent_id"] == post["context"]["span_id"]
    assert append["context"]["trace_id"] == f"0x{TRACE}"
    assert append["kind"] == "SpanKind.CLIENT"
    assert append["attributes"] == {
        "db.system.name": "sqlite",
        "db.operation.name": "append_message",
        "convostore.rows": 1,
        "convostore.retries": 0,
    }
    [get] = by_name["GET /conversations/{conversationId}/messages"]
    assert get["parent_id"] is None and get["context"]["trace_id"] != f"0x{TRACE}"  # a new trace
    [page] = by_name["convostore.get_messages"]
    assert page["parent_id"] == get["context"]["span_id"]
    assert cid not in spans_file.read_text()  # ids in paths are not in the spans
    # the logs: a JSON object a line, the access lines with the request's ids
    lines = [json.loads(line) for line in server.log_text().splitlines() if line.strip()]
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    [posted] = [line for line in access if line.get("method") == "POST"]
    assert posted["request_id"] == "req-123.a:b" and posted["trace_id"] == TRACE
    assert posted["span_id"] == post["context"]["span_id"].removeprefix("0x")
    assert posted["status"] == 201
    [got] = [line for line in access if line.get("method") == "GET" and cid in line["path"]]
    assert got["request_id"] == generated
    assert got["trace_id"] == get["context"]["trace_id"].removeprefix("0x")
    assert any(line["logger"] == "uvicorn.error" for line in lines)  # the server's own lines


def test_a_provider_given_to_configure_takes_the_requests_spans_too(tmp_path: Path) -> None:
    """No global provider in this process: the one given to ``telemetry.configure`` records
    the request's span (following its traceparent) and the store's under it."""
    spans_file = tmp_path / "spans.jsonl"
    url = f"sqlite:///{tmp_path / 'store.db'}"
    server = start_factory(
        "configured_tracing", url, tmp_path, CONVOSTORE_TEST_SPANS=str(spans_file)
    )
    try:
        cid = new_id()
        sent = server.client("alice").post(
            f"/conversations/{cid}/messages",
            json={"role": "user", "content": "hello"},
            headers={"traceparent": f"00-{TRACE}-{CALLER}-01"},
        )
        assert sent.status_code == 201
    finally:
        server.stop()
    by_name = {span["name"]: span for span in _spans(spans_file)}
    post = by_name["POST /conversations/{conversationId}/messages"]
    assert post["context"]["trace_id"] == f"0x{TRACE}" and post["parent_id"] == f"0x{CALLER}"
    append = by_name["convostore.append_message"]
    assert append["parent_id"] == post["context"]["span_id"]
    assert cid not in spans_file.read_text()


def test_an_unfit_request_id_is_replaced(traced: tuple[Server, Path]) -> None:
    server, _ = traced
    with httpx.Client(base_url=server.base) as client:
        for given in ["", "a" * 129, "two words", "semi;colon", "ünï", "x\u00a0y"]:
            answer = client.get("/healthz", headers={"X-Request-ID": given.encode()})
            assert answer.status_code == 200
            replaced = answer.headers["x-request-id"]
            assert re.fullmatch("[0-9a-f]{32}", replaced), given
    assert "a" * 129 not in server.log_text()
