"""Request ids and the server's log records: every record made while a request is served (the
server's, the library's, uvicorn's access line) carries its request id and its trace and span
ids; ``--log-format json`` writes each record as one JSON object a line.

A request's id is the ``X-Request-ID`` it came with, when that is 1 to 128 characters of
letters, digits and ``._:-`` (what a proxy or a load balancer sets), else a new one; the
response carries it back in ``X-Request-ID``.
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import re
import uuid
from contextvars import ContextVar
from typing import Any, Literal

from opentelemetry import trace
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import LOGGING_CONFIG

LogFormat = Literal["text", "json"]
HEADER = "x-request-id"
_ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{1,128}")

request_id: ContextVar[str | None] = ContextVar("convostore_request_id", default=None)
"""The id of the request being served (None outside a request)."""


def _given_or_new(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == HEADER.encode():
            text: str = value.decode("latin-1")
            if _ACCEPTED.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


class RequestIds:
    """Give each request its id (``request_id``) and answer it in ``X-Request-ID``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _given_or_new(scope)
        token = request_id.set(rid)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = rid
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id.reset(token)


class RequestContext(logging.Filter):
    """Add ``request_id``, ``trace_id`` and ``span_id`` to each record (``-`` where there is
    none: no request, or no recording span)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        context = trace.get_current_span().get_span_context()
        valid = context.is_valid
        record.trace_id = format(context.trace_id, "032x") if valid else "-"
        record.span_id = format(context.span_id, "016x") if valid else "-"
        return True


_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, the request's ids, uvicorn's
    access fields where the record is an access line, and the exception's traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("request_id", "trace_id", "span_id"):
            value = getattr(record, name, "-")
            if value != "-":
                line[name] = value
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            line.update(zip(_ACCESS_FIELDS, args, strict=True))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def log_config(log_format: LogFormat) -> dict[str, Any]:
    """uvicorn's logging configuration (``log_config``) for ``log_format``: ``text`` is
    uvicorn's own; ``json`` writes every record of uvicorn, the server and the library as JSON
    lines with the request's ids."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"request": {"()": f"{__name__}.RequestContext"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["request"]
    if log_format == "json":
        for formatter in config["formatters"].values():
            formatter.clear()
            formatter["()"] = f"{__name__}.JsonFormatter"
        for name in ("convostore", "convostore_server"):
            config["loggers"][name] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
