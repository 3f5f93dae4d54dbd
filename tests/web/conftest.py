"""The web view in a real browser: Debian's chromium driven by Playwright (the PyPI package
carries its driver; no browser is downloaded), against the real server (uvicorn in a
subprocess) on an SQLite file and on PostgreSQL. ``make browser`` installs chromium."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))

from convostore_server import new_token
from served import BIN, Server, free_port, spawn, store_url

CHROMIUM = os.environ.get("CONVOSTORE_TEST_CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags the closed network here refuses many connections.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).parent / "screenshots"  # git-ignored test artifacts
USERS = ("alice", "bob", "carol", "dan", "erin", "frank", "gina", "hal", "ivy", "jo", "kim", "lee")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """``convostore-server`` on an empty database, with a token per user of ``USERS`` and one
    for an admin; tests keep apart by each using users and ids of their own."""
    tmp = tmp_path_factory.mktemp(f"web-{request.param}")
    with store_url(request.param, tmp) as url:
        tokens, lines = {}, []
        for who, role in [*((u, f"user:{u}") for u in USERS), ("admin", "admin")]:
            tokens[who], line = new_token(role)
            lines.append(line)
        tokens_file = tmp / "tokens.txt"
        tokens_file.write_text("\n".join(lines) + "\n")
        port = free_port()
        args = [str(BIN / "convostore-server"), "--url", url, "--port", str(port)]
        process, log = spawn([*args, "--tokens", str(tokens_file)], tmp, port)
        running = Server(f"http://127.0.0.1:{port}", url, tokens, process, log, tokens_file)
        running.kind = request.param  # type: ignore[attr-defined]
        yield running
        running.stop()
    text = running.log_text()
    assert '" 500' not in text and "Traceback" not in text, text[-3000:]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium package")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Console:
    """What the page reported: console errors and uncaught exceptions."""

    errors: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)  # substrings of errors a test expects

    def add(self, text: str) -> None:
        self.errors.append(text)

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(x in e for x in self.expected)]


@dataclass
class Opened:
    page: Page
    console: Console
    requests: list[str]


OpenPage = Callable[..., Opened]


@pytest.fixture
def open_page(
    browser: Browser, server: Server, request: pytest.FixtureRequest
) -> Iterator[OpenPage]:
    """``open_page(who, path="#/", width=1280)``: a fresh browser context (its own
    sessionStorage) signed in as ``who``. Every page must end the test without a console
    error or an uncaught exception (other than those the test declares expected)."""
    opened: list[Opened] = []

    def open_(who: str, path: str = "#/", width: int = 1280, height: int = 800) -> Opened:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        console = Console()
        requests: list[str] = []

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                console.add(message.text)

        page.on("console", on_console)
        page.on("pageerror", lambda error: console.add(f"uncaught: {error}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"{server.base}/ui/{path}")
        page.fill("#token", server.tokens[who])
        page.press("#token", "Enter")
        page.wait_for_selector("#app:not([hidden])")
        result = Opened(page, console, requests)
        opened.append(result)
        return result

    yield open_
    for item in opened:
        item.page.context.close()
    for item in opened:
        assert item.console.unexpected() == [], item.console.errors


def screenshot(page: Page, server: Server, name: str) -> None:
    """Save a screenshot of what the page shows as a test artifact."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-{server.kind}.png"))  # type: ignore[attr-defined]


def count(page: Page, selector: str) -> int:
    return int(page.locator(selector).count())


def scroll_until(page: Page, scroller: str, condition: str, *, to: str = "bottom") -> None:
    """Scroll ``scroller`` to its bottom (or top) until the JavaScript ``condition`` holds;
    the page loads more as its end comes into view."""
    end = "el.scrollHeight" if to == "bottom" else "0"
    for _ in range(50):
        page.locator(scroller).evaluate(f"el => {{ el.scrollTop = {end}; }}")
        try:
            page.wait_for_function(f"() => ({condition})", timeout=3000)
        except PlaywrightTimeout:  # not yet: scroll again (a page loaded, the end moved)
            continue
        return
    raise AssertionError(f"scrolling {scroller} never reached: {condition}")


def js_value(page: Page, expression: str) -> Any:
    return page.evaluate(expression)
