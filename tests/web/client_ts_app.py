"""The server of ``test_client_ts.py``: convostore-server's app (``app_from_env``) with the
TypeScript client's built modules and a test page mounted beside its API, under the web
view's headers (its Content-Security-Policy), so the page calls the API from its own origin
as the web view does. ``uvicorn --factory client_ts_app:app``."""

from __future__ import annotations

import os
from pathlib import Path

from convostore_server import app_from_env
from convostore_server.webview import SecurityHeaders
from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).parent


def app() -> FastAPI:
    """``$CLIENT_TS_DIST``: the client's modules, built by the test into a directory of its
    own (the client's suite reads its dist/ meanwhile)."""
    api = app_from_env()
    api.mount(
        "/client-ts/dist", SecurityHeaders(StaticFiles(directory=os.environ["CLIENT_TS_DIST"]))
    )
    api.mount(
        "/client-ts", SecurityHeaders(StaticFiles(directory=HERE / "client_ts_page", html=True))
    )
    return api
