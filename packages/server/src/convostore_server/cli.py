"""``convostore-server``: serve a store over HTTP with uvicorn.

    convostore-server --url postgresql://... --host 0.0.0.0 --port 8000 --tokens tokens.txt
    convostore-server --new-token user:u_123     # prints a token and its tokens-file line

The options reach the app (in every worker) through environment variables, read by
``app_from_env``, which also serves ``uvicorn --factory convostore_server.cli:app_from_env``.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from collections.abc import Callable, Sequence

import uvicorn
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE

from .app import create_app
from .auth import TOKENS_FILE_ENV, TokenTable, new_token
from .logs import log_config
from .protocol import (
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_MAX_HEAD_BYTES,
    HEAD_TIMEOUT_ENV,
    MAX_HEAD_ENV,
)
from .routes.health import DEFAULT_READY_TIMEOUT
from .supervisor import DEFAULT_WORKER_TIMEOUT, Supervisor

AUTH_ENV = "CONVOSTORE_SERVER_AUTH"
"""``none`` runs without authentication (set by ``--no-auth``, loopback clients only)."""
CORS_ENV = "CONVOSTORE_SERVER_CORS_ORIGINS"
"""Comma-separated origins a browser may call from."""
MAX_BODY_ENV = "CONVOSTORE_SERVER_MAX_BODY_BYTES"
"""The largest request body, in bytes."""
MAX_INFLIGHT_ENV = "CONVOSTORE_SERVER_MAX_INFLIGHT_BODY_BYTES"
"""The request body bytes a worker holds at once."""
REPLICAS_ENV = "CONVOSTORE_REPLICAS"
"""URLs of PostgreSQL standbys that answer reads, separated by spaces."""
READY_TIMEOUT_ENV = "CONVOSTORE_SERVER_READY_TIMEOUT"
"""The seconds ``GET /readyz`` waits for the database."""


def app_from_env() -> FastAPI:
    """The app as the environment configures it: the store at ``$CONVOSTORE_URL`` (or the
    default ``ConversationStore()`` opens) with the standbys of ``$CONVOSTORE_REPLICAS``,
    tokens from ``$CONVOSTORE_SERVER_TOKENS`` and the file ``$CONVOSTORE_SERVER_TOKENS_FILE``
    names."""
    origins = [o.strip() for o in os.environ.get(CORS_ENV, "").split(",") if o.strip()]
    max_body, inflight = os.environ.get(MAX_BODY_ENV), os.environ.get(MAX_INFLIGHT_ENV)
    replicas = os.environ.get(REPLICAS_ENV, "").split()
    ready_timeout = os.environ.get(READY_TIMEOUT_ENV)
    return create_app(
        os.environ.get("CONVOSTORE_URL") or None,
        auth=False if os.environ.get(AUTH_ENV) == "none" else None,
        cors_origins=origins,
        max_body_bytes=int(max_body) if max_body else None,
        max_inflight_body_bytes=int(inflight) if inflight else None,
        replicas=replicas or None,
        ready_timeout=float(ready_timeout) if ready_timeout else DEFAULT_READY_TIMEOUT,
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convostore-server",
        description="Serve a convostore database over HTTP (conversations, messages, memory"
        " stores, live events).",
    )
    parser.add_argument(
        "--url",
        help="the store: sqlite:///file.db, postgresql://... (default: $CONVOSTORE_URL, else"
        " ./convostore.db)",
    )
    parser.add_argument(
        "--replica",
        action="append",
        default=[],
        metavar="URL",
        help="a PostgreSQL standby of --url that answers reads (repeat for more; default:"
        f" ${REPLICAS_ENV}, URLs separated by spaces)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (8000)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    parser.add_argument(
        "--worker-timeout",
        type=_positive(float),
        default=DEFAULT_WORKER_TIMEOUT,
        metavar="SECONDS",
        help="with --workers above 1: the time a worker may take to answer the supervisor's"
        f" health check, starting included, before it is replaced ({DEFAULT_WORKER_TIMEOUT})",
    )
    parser.add_argument(
        "--tokens",
        metavar="FILE",
        help="the token table: one '<sha256 of the token> admin' or '<sha256> user <user_id>'"
        " a line (default: $CONVOSTORE_SERVER_TOKENS_FILE and $CONVOSTORE_SERVER_TOKENS)",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="no authentication, every caller an admin: refused unless --host is loopback",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin browsers may call from (repeat for more)",
    )
    parser.add_argument("--max-body-bytes", type=_positive(int), help="the largest request body")
    parser.add_argument(
        "--max-inflight-body-bytes",
        type=_positive(int),
        help="the request body bytes a worker holds at once, across requests (default: twice"
        " --max-body-bytes, at least 256 MiB); past it a request is 503",
    )
    parser.add_argument(
        "--header-timeout",
        type=_positive(float),
        metavar="SECONDS",
        help=f"the time a request's head (request line and headers) may take to arrive, from"
        f" the connection's opening or its first byte ({DEFAULT_HEAD_TIMEOUT:g}); then 408 and"
        " the connection closes",
    )
    parser.add_argument(
        "--max-header-bytes",
        type=_positive(int),
        help=f"the largest request head, URL and headers ({DEFAULT_MAX_HEAD_BYTES}); over it"
        " 431 and the connection closes",
    )
    parser.add_argument(
        "--ready-timeout",
        type=_positive(float),
        metavar="SECONDS",
        help=f"the time GET /readyz waits for the database before it answers 503"
        f" ({DEFAULT_READY_TIMEOUT:g})",
    )
    parser.add_argument("--log-level", default="info")
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text (uvicorn's lines) or json: a JSON object a line, each with the request id"
        " and the trace and span ids of the request it was written for (text)",
    )
    parser.add_argument("--no-access-log", action="store_true", help="no line per request")
    parser.add_argument(
        "--new-token",
        metavar="ROLE",
        help="print a new token for ROLE ('admin' or 'user:<user_id>') and the line to add to"
        " the tokens file, then exit",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.new_token is not None:
        try:
            token, line = new_token(args.new_token)
        except ValueError as exc:
            sys.exit(f"convostore-server: {exc}")
        print(f"token (give it to the client; it is not stored): {token}")
        print(f"tokens-file line: {line}")
        return
    if args.no_auth and not is_loopback(args.host):
        sys.exit(
            f"convostore-server: --no-auth is refused on {args.host}: bind a loopback address"
            " (127.0.0.1) or configure tokens"
        )
    if args.url:
        os.environ["CONVOSTORE_URL"] = args.url
    if args.replica:
        os.environ[REPLICAS_ENV] = " ".join(args.replica)
    if args.tokens:
        os.environ[TOKENS_FILE_ENV] = os.path.abspath(args.tokens)
    if args.no_auth:
        os.environ[AUTH_ENV] = "none"
    if args.cors_origin:
        os.environ[CORS_ENV] = ",".join(args.cors_origin)
    for value, name in [
        (args.max_body_bytes, MAX_BODY_ENV),
        (args.max_inflight_body_bytes, MAX_INFLIGHT_ENV),
        (args.header_timeout, HEAD_TIMEOUT_ENV),
        (args.max_header_bytes, MAX_HEAD_ENV),
        (args.ready_timeout, READY_TIMEOUT_ENV),
    ]:
        if value is not None:
            os.environ[name] = str(value)
    if not args.no_auth:
        try:
            TokenTable.from_env()  # a malformed tokens file stops here, before any worker
        except (OSError, ValueError) as exc:
            sys.exit(f"convostore-server: {exc}")
    config = uvicorn.Config(
        "convostore_server.cli:app_from_env",
        factory=True,
        http="convostore_server.protocol:BoundedHead",  # bounds a request head's size and time
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        log_config=log_config(args.log_format),
        access_log=not args.no_access_log,
        timeout_graceful_shutdown=5,  # event streams stay open: end them on shutdown
        timeout_worker_healthcheck=args.worker_timeout,
        proxy_headers=not args.no_auth,  # without authentication the socket's peer decides
    )
    if config.workers > 1:  # as uvicorn.run, with a supervisor that says why a worker went
        Supervisor(config, sockets=[config.bind_socket()]).run()
        return
    server = uvicorn.Server(config)
    server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


if __name__ == "__main__":
    main()
