"""The web view: static files (``web/`` in this package) served at ``/ui``, with headers that
keep a page showing stored data from running any of it."""

from __future__ import annotations

from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ErrorDetail, error_response, http_code

WEB_DIR = Path(__file__).with_name("web")
"""The page's files: index.html, its style sheet and its JavaScript modules."""

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",  # the package's modules only: no inline script, no eval
        "style-src 'self'",
        "connect-src 'self'",  # the API of this server
        "img-src 'self' data: https:",  # images stored in messages (data: or https URLs)
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated (ETag), so an upgrade is seen at once
}


class SecurityHeaders:
    """Add ``HEADERS`` to every response of the wrapped app, its errors too (``StaticFiles``
    raises them, for the app's handlers: here they are answered, as JSON, with the headers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        except HTTPException as exc:
            if started:
                raise
            detail = ErrorDetail(code=http_code(exc.status_code), message=str(exc.detail))
            response = error_response(exc.status_code, detail, dict(exc.headers or {}))
            await response(scope, receive, with_headers)


def web_app() -> ASGIApp:
    """The static files of the web view, with the security headers."""
    return SecurityHeaders(StaticFiles(directory=WEB_DIR, html=True))
