"""convostore-server: a front-end's view of what an agent writes, over HTTP.

    .venvs/server/bin/python examples/server_quickstart.py

Offline: it makes a token, starts the server on a free loopback port over an SQLite file,
posts a user message over HTTP, lets an "agent" append the reply through the Python store in
this process (the same database), and reads the conversation back over HTTP. Only the
standard library speaks HTTP here (urllib), as a cloud function might.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from convostore import ConversationStore
from convostore_server import new_token


def call(base: str, token: str, method: str, path: str, body: Any = None) -> Any:
    """One JSON request with a bearer token; the decoded answer (None for 204)."""
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


def start_server(url: str, tokens_file: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``convostore-server --url URL --port P --tokens FILE``, waited for until it answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "convostore_server", "--url", url, "--port", str(port),
         "--tokens", str(tokens_file), "--no-access-log"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{base}/openapi.json", timeout=5).close()
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)  # still starting
        else:
            return process, base
    process.kill()
    raise RuntimeError("the server did not start")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'chat.db'}"
        # A token for user u_123: the client keeps the token, the server only its hash.
        token, line = new_token("user:u_123")
        tokens_file = Path(tmp) / "tokens.txt"
        tokens_file.write_text(line + "\n")
        process, base = start_server(url, tokens_file)
        try:
            # The front-end posts the user's message; the conversation is created as u_123's.
            posted = call(base, token, "POST", "/conversations/chat-1/messages",
                          {"role": "user", "content": "What's the weather in Paris?"})  # fmt: skip
            print("posted", posted["messageId"][:4] + "...")

            # The agent, in its own process (here: this one), writes through the store.
            reply = "Sunny, 22C in Paris."
            with ConversationStore(url) as store:
                store.append_message(conversation_id="chat-1", role="assistant", content=reply)

            # The front-end reads the conversation and the user's list over HTTP.
            page = call(base, token, "GET", "/conversations/chat-1/messages?limit=20")
            for message in page["items"]:
                print(f"{message['role']:>9}: {message['content']}")
            listed = call(base, token, "GET", "/conversations")
            print(
                "conversations:",
                [(c["conversationId"], c["messageCount"]) for c in listed["items"]],
            )
        finally:
            process.terminate()
            process.wait(15)


if __name__ == "__main__":
    main()
