"""An agent run by the Agents SDK's ``Runner`` writes its session; a front-end reads the same
conversation over HTTP from ``convostore-server`` (another process, in its own environment, as
a deployment runs it), on an SQLite file and on PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel
from convostore import ConversationStore, Message, to_openai_input
from convostore_openai import ConvostoreSession
from oa_helpers import agent_for, run_agent, tool_turn

ROOT = Path(__file__).parents[2]
SERVER = ROOT / ".venvs" / "server" / "bin" / "convostore-server"


def get(url: str, token: str | None = None) -> Any:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(shared_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The server over ``shared_url`` with a token for alice; yields (base URL, token)."""
    if not SERVER.exists():
        pytest.fail(f"{SERVER} is missing: run make install-server")
    token = secrets.token_urlsafe(24)
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{hashlib.sha256(token.encode()).hexdigest()} user alice\n")
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [str(SERVER), "--url", shared_url, "--port", str(port), "--tokens", str(tokens)],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            get(f"{base}/openapi.json")
            break
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)
    assert process.poll() is None, (tmp_path / "server.log").read_text()
    yield base, token
    process.terminate()
    process.wait(15)
    log.close()


@pytest.mark.anyio
async def test_a_runner_session_is_read_over_http(shared_url: str, server: tuple[str, str]) -> None:
    base, token = server
    model = ScriptedModel(tool_turn(1, "Paris", "Sunny in Paris."))
    async with ConvostoreSession("chat-http", url=shared_url, user_id="alice") as session:
        await run_agent("run", agent_for(model), "Weather in Paris?", session=session)
        items = await session.get_items()
    with ConversationStore(shared_url) as store:
        history = store.get_history(conversation_id="chat-http")
    page = get(f"{base}/conversations/chat-http/messages?limit=100", token)["items"]
    listed = get(f"{base}/conversations", token)
    assert [m["messageId"] for m in page] == [m.message_id for m in history]
    assert [m["content"] for m in page] == items  # the items, exactly as stored
    assert [c["conversationId"] for c in listed["items"]] == ["chat-http"]
    assert listed["items"][0]["messageCount"] == len(items)
    # what the front-end got converts like what the agent stored
    over_http = [Message.model_validate(m) for m in page]
    assert over_http == history
    assert to_openai_input(over_http) == to_openai_input(history)
    assert to_openai_input(over_http)[-1]["content"] == [
        {"type": "text", "text": "Sunny in Paris."}
    ]
