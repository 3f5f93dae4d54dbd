"""The web view's files at /ui (no data, no authentication needed to load them) with a
Content-Security-Policy that forbids inline script, and ``GET /me``, which the page asks first.
The page itself is tested in a browser in tests/web."""

from __future__ import annotations

import re
from pathlib import Path

import convostore_server
from served import Server

WEB = Path(convostore_server.__file__).with_name("web")


def test_me_says_who_a_token_is_for(server: Server) -> None:
    assert server.client("alice").get("/me").json() == {"userId": "alice", "admin": False}
    assert server.client("admin").get("/me").json() == {"userId": None, "admin": True}
    refused = server.client(None).get("/me")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthenticated"
    forbidden = server.client("bob").get("/me", params={"userId": "alice"})
    assert forbidden.status_code == 403


def test_the_page_is_served_with_its_security_headers(server: Server) -> None:
    anonymous = server.client(None)
    page = anonymous.get("/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="app.js">' in page.text
    paths = ("/ui/", "/ui/app.js", "/ui/client/index.js", "/ui/style.css", "/ui/nothing.js")
    for path in (*paths, "/ui/a/b/"):
        headers = anonymous.get(path).headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "default-src 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"
    for module in ("/ui/app.js", "/ui/client/index.js"):
        assert anonymous.get(module).headers["content-type"].startswith("text/javascript")
    home = anonymous.get("/", follow_redirects=False)
    assert (home.status_code, home.headers["location"]) == (307, "ui/")
    missing = anonymous.get("/ui/nothing.js")
    assert missing.status_code == 404  # with the headers above, as every /ui response
    assert missing.json()["error"]["code"] == "not_found"
    wrong = anonymous.post("/ui/")
    assert (
        wrong.status_code == 405
        and "default-src 'none'" in wrong.headers["content-security-policy"]
    )


def test_the_page_never_builds_html_from_strings() -> None:
    """Data reaches the page as text only: no innerHTML, outerHTML, insertAdjacentHTML,
    document.write or eval in any module, and no inline script or handler in index.html."""
    sources = sorted(WEB.rglob("*.js"))  # the client's build in client/ too
    names = {str(p.relative_to(WEB)) for p in sources}
    assert names >= {"app.js", "store.js", "render.js", "client/index.js", "client/events.js"}
    forbidden = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function"
    )
    for path in sources:
        assert not forbidden.search(path.read_text()), path.name
    index = (WEB / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", index)
    assert not re.search(r"\son[a-z]+=", index)
