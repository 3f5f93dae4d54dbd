"""Apps built with create_app's options, served by uvicorn (``--factory custom_apps:<name>``)
in the tests; the store URL and the tokens come from the environment as for the command."""

from __future__ import annotations

import os

from convostore import ConversationStore, Limits
from convostore_server import Principal, TokenTable, create_app
from fastapi import FastAPI
from starlette.requests import HTTPConnection

SMALL = Limits(
    max_content_bytes=1000,
    max_metadata_bytes=500,
    max_messages_per_conversation=5,
    max_memory_content_bytes=100,
    max_memory_entries_per_store=2,
)


def small_limits() -> FastAPI:
    """Small store limits, a 4 KB body bound and one CORS origin."""
    store = ConversationStore(os.environ["CONVOSTORE_URL"], limits=SMALL)
    return create_app(store, max_body_bytes=4096, cors_origins=["https://app.example"])


SESSIONS = {"s-alice": Principal(user_id="alice"), "s-admin": Principal(admin=True)}


async def cookie_session(connection: HTTPConnection) -> Principal | None:
    """An app's own authentication: a session cookie (a JWT check would sit here)."""
    return SESSIONS.get(connection.cookies.get("session", ""))


def cookie_auth() -> FastAPI:
    return create_app(os.environ["CONVOSTORE_URL"], auth=cookie_session)


def mounted() -> FastAPI:
    """The server mounted under /api inside an app of one's own."""
    parent = FastAPI()

    @parent.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    parent.mount("/api", create_app(os.environ["CONVOSTORE_URL"], auth=TokenTable.from_env()))
    return parent


def tight_budget() -> FastAPI:
    """Bodies of 1,000 bytes at most, 3,000 bytes of them held at once."""
    return create_app(
        os.environ["CONVOSTORE_URL"], max_body_bytes=1000, max_inflight_body_bytes=3000
    )


def configured_tracing() -> FastAPI:
    """Spans to a tracer provider given to ``convostore.telemetry.configure`` (no global one),
    written as JSON lines to ``$CONVOSTORE_TEST_SPANS``."""
    from convostore import telemetry
    from traced_server import spans_to_file

    telemetry.configure(tracer_provider=spans_to_file(os.environ["CONVOSTORE_TEST_SPANS"]))
    return create_app(os.environ["CONVOSTORE_URL"], auth=TokenTable.from_env())
