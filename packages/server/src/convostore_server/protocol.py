"""uvicorn's httptools protocol with the bounds uvicorn lacks for a request's head: its size
and the time it takes to arrive. Without them a client may send megabytes of headers, or half
a request and then nothing, and keep the connection (and its memory) for ever.

``convostore-server`` serves with it; under your own uvicorn, pass
``--http convostore_server.protocol:BoundedHead``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import TypeAdapter
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .errors import ErrorBody, ErrorDetail, dump_json

HEAD_TIMEOUT_ENV = "CONVOSTORE_SERVER_HEADER_TIMEOUT"
"""Seconds a request's head (request line and headers) may take to arrive (default 20)."""
MAX_HEAD_ENV = "CONVOSTORE_SERVER_MAX_HEADER_BYTES"
"""The largest request head, in bytes (default 65536)."""
DEFAULT_HEAD_TIMEOUT = 20.0
DEFAULT_MAX_HEAD_BYTES = 64 * 1024

_ERROR = TypeAdapter(ErrorBody)


def _refusal(status: int, reason: str, code: str, message: str) -> bytes:
    body = dump_json(ErrorBody(error=ErrorDetail(code=code, message=message)), _ERROR)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedHead(HttpToolsProtocol):
    """A request's head must arrive whole within ``$CONVOSTORE_SERVER_HEADER_TIMEOUT`` seconds
    of the connection's opening (or of its first byte, for a later request on a kept-alive
    connection), else 408 and the connection closes; it may hold at most
    ``$CONVOSTORE_SERVER_MAX_HEADER_BYTES`` bytes of URL and headers (a head still incomplete
    is counted a read at a time, as the parser holds its unfinished part), else 431 and the
    connection closes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout = float(os.environ.get(HEAD_TIMEOUT_ENV) or DEFAULT_HEAD_TIMEOUT)
        self.max_head_bytes = int(os.environ.get(MAX_HEAD_ENV) or DEFAULT_MAX_HEAD_BYTES)
        self.head_timer: asyncio.TimerHandle | None = None  # set while a head is incomplete
        self.parsed = 0  # the URL's and the headers' bytes, as the parser gives them
        self.received = 0  # the bytes received while the head stays incomplete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_head()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_head()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._end_head()
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        in_head = self.head_timer is not None
        super().data_received(data)
        if in_head and self.head_timer is not None:  # still in the head: all of it was head
            self.received += len(data)
            if self.received > self.max_head_bytes:
                self._too_large()

    def send_400_response(self, msg: str) -> None:
        if self.parsed > self.max_head_bytes:  # the parser stopped at `_count`
            self._too_large()
        else:
            super().send_400_response(msg)

    def _count(self, size: int) -> None:
        self.parsed += size
        if self.parsed > self.max_head_bytes:
            raise ValueError("the request head is too large")  # to send_400_response

    def _start_head(self) -> None:
        if self.head_timer is None:
            self.parsed = self.received = 0
            self.head_timer = self.loop.call_later(self.head_timeout, self._timed_out)

    def _end_head(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _timed_out(self) -> None:
        self.head_timer = None
        message = f"the request's head did not arrive within {self.head_timeout:g} s"
        self._refuse(408, "Request Timeout", "request_timeout", message)

    def _too_large(self) -> None:
        message = f"the request's URL and headers exceed {self.max_head_bytes} bytes"
        self._refuse(431, "Request Header Fields Too Large", "too_large", message)

    def _refuse(self, status: int, reason: str, code: str, message: str) -> None:
        self._end_head()
        if not self.transport.is_closing():
            self.transport.write(_refusal(status, reason, code, message))
            self.transport.close()
