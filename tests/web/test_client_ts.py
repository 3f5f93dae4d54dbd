"""The TypeScript client (packages/client-ts) in a real browser: its built modules load under
the web view's Content-Security-Policy (no inline script, connect-src 'self') from the
server's origin, and a page's calls (appends, reads, the event stream, a refused argument)
work, with no console error."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from convostore_server import new_token
from convostore_server.webview import CONTENT_SECURITY_POLICY
from playwright.sync_api import Browser, ConsoleMessage
from served import BIN, Server, clean_env, free_port, spawn, store_url

HERE = Path(__file__).parent
CLIENT = HERE.parents[1] / "packages" / "client-ts"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def client_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """``client_ts_app:app`` (the server's app with the client's modules and a test page) on
    an empty database, the client built first into a directory of its own."""
    tmp = tmp_path_factory.mktemp(f"client-ts-{request.param}")
    tsc = CLIENT / "node_modules" / ".bin" / "tsc"  # `make install-ts` installs it
    config = CLIENT / "tsconfig.json"
    built = subprocess.run(
        [tsc, "-p", config, "--outDir", tmp / "dist"], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, f"tsc in packages/client-ts:\n{built.stdout}{built.stderr}"
    with store_url(request.param, tmp) as url:
        token, line = new_token("user:alice")
        tokens_file = tmp / "tokens.txt"
        tokens_file.write_text(line + "\n")
        env = clean_env(
            PYTHONPATH=str(HERE),
            CONVOSTORE_URL=url,
            CONVOSTORE_SERVER_TOKENS_FILE=str(tokens_file),
            CLIENT_TS_DIST=str(tmp / "dist"),
        )
        port = free_port()
        args = [str(BIN / "uvicorn"), "--factory", "client_ts_app:app", "--port", str(port)]
        process, log = spawn(args, tmp, port, env)
        running = Server(f"http://127.0.0.1:{port}", url, {"alice": token}, process, log)
        yield running
        running.stop()


def test_the_client_runs_in_a_browser_under_the_web_views_csp(
    browser: Browser, client_server: Server
) -> None:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    response = page.goto(f"{client_server.base}/client-ts/#token={client_server.tokens['alice']}")
    assert response is not None
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    page.wait_for_selector("body[data-done]")
    text = page.locator("#out").text_content() or ""
    assert page.locator("body").get_attribute("data-done") == "ok", text
    results = json.loads(text)
    assert results["me"] == {"userId": "alice", "admin": False}
    assert results["messageId"].startswith("msg_")
    assert results["event"] == "message.created"
    assert results["contents"] == ["<img src=x onerror=alert(1)>"]
    assert results["anthropic"] == [{"role": "user", "content": "<img src=x onerror=alert(1)>"}]
    assert results["conversations"] == ["browser-1"]
    assert results["refused"] == "limit must be between 1 and 100, got 0"
    context.close()
    assert errors == []
