"""``create_app``: the HTTP side of a convostore store, as a FastAPI (ASGI) app.

Each endpoint calls one method of the core's ``AsyncConversationStore`` and passes the caller's
``user_id`` to it, so ownership is enforced by the core call itself; every rule (limits,
cursors, ownership, merge, quota) is the core's. The routes live in ``routes/``, one module
per resource; this module assembles them with the middleware and the web view.
"""

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal, TypeAlias

from convostore import AsyncConversationStore, ConversationStore, MemoryValidationError
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from pydantic.alias_generators import to_camel
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import RedirectResponse, Response

from . import tracing
from .auth import Authenticator, TokenTable
from .errors import install_error_handlers
from .hub import ChangeHub
from .logs import RequestIds
from .middleware import (
    POSITION_HEADER,
    BoundedBodies,
    EncodedSlashes,
    ReadYourWrites,
)
from .routes import (
    conversations,
    events,
    health,
    memory,
    metrics,
    openai_v1,
    principal,
    search,
)
from .routes.common import ERRORS
from .routes.fast import FastRoute
from .routes.principal import AuthenticateFirst, Context, caller_dependency
from .webview import web_app

log = logging.getLogger("convostore_server")

StoreArg: TypeAlias = ConversationStore | AsyncConversationStore | str | None


def _operation_id(route: APIRoute) -> str:
    # Each operation's id is its function's name in camelCase (getMessages): what generated
    # clients name their methods after.
    return to_camel(route.name)


def _routers(
    ctx: Context, hub: ChangeHub, readiness: health.Readiness, with_metrics: bool
) -> list[APIRouter]:
    probes = APIRouter(generate_unique_id_function=_operation_id)  # unauthenticated
    health.routes(probes, readiness)
    router = APIRouter(
        responses=ERRORS, generate_unique_id_function=_operation_id, route_class=FastRoute
    )
    who = caller_dependency(ctx)
    principal.routes(router, who)
    conversations.routes(router, who, ctx)
    events.routes(router, who, hub)
    memory.routes(router, who)
    search.routes(router, who)
    if with_metrics:
        metrics.routes(router, who)
    v1 = APIRouter(responses=openai_v1.ERRORS, generate_unique_id_function=_operation_id)
    openai_v1.routes(v1, who)
    return [probes, router, v1]


def _async_store(
    store: StoreArg, replicas: Sequence[str] | None
) -> tuple[AsyncConversationStore, bool]:
    """The async store for ``store`` and whether it was opened here (and is ours to close)."""
    if replicas is not None and not (store is None or isinstance(store, str)):
        raise MemoryValidationError(
            "replicas goes with a URL; a store passed in keeps its own", argument="replicas"
        )
    if isinstance(store, AsyncConversationStore):
        return store, False
    if isinstance(store, ConversationStore):
        return AsyncConversationStore(sync=store), False
    if store is None or isinstance(store, str):
        return AsyncConversationStore(store, replicas=replicas), True
    raise MemoryValidationError(
        "store must be a ConversationStore, an AsyncConversationStore or a URL,"
        f" got {type(store).__name__}",
        argument="store",
    )


def create_app(
    store: StoreArg = None,
    *,
    auth: Authenticator | Literal[False] | None = None,
    cors_origins: Sequence[str] = (),
    cors_credentials: bool = False,
    max_body_bytes: int | None = None,
    max_inflight_body_bytes: int | None = None,
    replicas: Sequence[str] | None = None,
    ready_timeout: float = health.DEFAULT_READY_TIMEOUT,
    metrics: bool = True,
) -> FastAPI:
    """The ASGI app serving ``store`` (a store, its async twin, a URL, or None for the default
    of ``ConversationStore()``); mount it in your own app or run it with uvicorn.

    ``auth``: None reads the token table from ``$CONVOSTORE_SERVER_TOKENS`` /
    ``$CONVOSTORE_SERVER_TOKENS_FILE`` (no token configured: every request is 401); a
    ``TokenTable`` or your own function ``(request) -> Principal | None`` (may be async);
    ``False`` runs without authentication, every caller an admin, for loopback clients only.
    ``cors_origins`` are the origins a browser may call from (``"*"`` for any, but not with
    ``cors_credentials``, which lets them send cookies). ``max_body_bytes`` bounds a
    request body, checked before it is read (default: the store's content plus metadata
    limits, plus 1 MB); ``max_inflight_body_bytes`` bounds the request bodies this process
    holds at once (default: twice ``max_body_bytes``, at least 256 MiB; a request over it is
    503 ``overloaded``). Every request is authenticated from its head before any body is
    read; a refused one's body is never read. ``replicas``: URLs of PostgreSQL standbys that
    answer reads (with a URL ``store``); responses then carry ``Convostore-Position``, which
    a client sends back to read its writes through any worker or server (README).
    ``ready_timeout``: the seconds ``GET /readyz``
    waits for the database before it answers 503 (``GET /healthz`` checks nothing but the
    process; neither needs a token). ``metrics``: serve ``GET /metrics`` (admins only), the
    store's metrics in Prometheus's text format, read in this process by a meter provider of
    the server's own (``convostore.telemetry.configure``); False leaves the store's metrics
    to the application's OpenTelemetry setup.
    """
    ready_timeout = health.check_timeout(ready_timeout)
    if cors_credentials and "*" in cors_origins:
        raise MemoryValidationError(
            "cors_origins holds '*' while cors_credentials is set: any site could then read"
            " what a signed-in user's browser may (the CORS specification forbids the pair);"
            " name the origins that may send credentials",
            argument="cors_origins",
        )
    async_store, owned = _async_store(store, replicas)
    authenticate: Authenticator | None
    if auth is False:
        authenticate = None
    elif auth is None:
        authenticate = TokenTable.from_env()
        if not authenticate.entries:
            log.warning("no tokens configured: every request will be refused (401)")
    else:
        authenticate = auth
    limits = async_store.limits
    if max_body_bytes is None:
        max_body_bytes = limits.max_content_bytes + limits.max_metadata_bytes + 1024 * 1024
    if max_inflight_body_bytes is None:
        max_inflight_body_bytes = max(2 * max_body_bytes, 256 * 1024 * 1024)
    if max_inflight_body_bytes < max_body_bytes:
        raise MemoryValidationError(
            f"max_inflight_body_bytes ({max_inflight_body_bytes}) is under max_body_bytes"
            f" ({max_body_bytes}): a request of the largest size could never be taken",
            argument="max_inflight_body_bytes",
        )

    hub = ChangeHub(async_store)
    ctx = Context(async_store, authenticate)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await hub.close()
        await ctx.aclose()
        if owned:
            await async_store.aclose()

    app = FastAPI(
        title="convostore-server",
        version="0.1.0",
        description="Conversations, messages and memory stores of a convostore database.",
        lifespan=lifespan,
        # The request spans are the instrumentation's (tracing.py), with which FastAPI's own
        # telemetry records nothing; off, it does not look up the providers at each request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.convostore = async_store
    readiness = health.Readiness(async_store, ready_timeout)
    for router in _routers(ctx, hub, readiness, metrics):
        # The routes themselves, not `include_router`: its wrapper re-checks at each request
        # that the included router's routes have not changed (a tenth of a request's time).
        # Each route was made whole by its router (responses, operation ids).
        app.router.routes.extend(router.routes)

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse("ui/", status_code=307)  # relative: works where it is mounted

    app.mount("/ui", web_app(), name="ui")  # the web view: static files, no data
    install_error_handlers(app)
    # From the inside out: the bounds of bodies (a declared length over the bound, the
    # bodies held at once, a body cut at its bound as it streams), the position a client
    # read (with replicas), the principal (before any body is read).
    app.add_middleware(
        BoundedBodies, max_bytes=max_body_bytes, max_inflight_bytes=max_inflight_body_bytes
    )
    app.add_middleware(ReadYourWrites, store=async_store)
    app.add_middleware(AuthenticateFirst, ctx=ctx)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_credentials=cors_credentials,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "Idempotency-Key",
                "Last-Event-ID",
                POSITION_HEADER,
            ],
            expose_headers=[POSITION_HEADER],
        )
    app.add_middleware(EncodedSlashes)
    app.add_middleware(RequestIds)  # outermost but the span: every answer names its request
    tracing.instrument(app)  # a span per request, the child of the caller's traceparent
    return app
