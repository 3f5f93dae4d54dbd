"""``convostore-server`` (its command's ``main``) in a process whose OpenTelemetry tracer provider
is the SDK's, writing each finished span as a JSON line to the file ``$CONVOSTORE_TEST_SPANS``:
what an operator's set-up (``opentelemetry-instrument``, an exporter) does, read back by the
tests."""

from __future__ import annotations

import os
import sys

from convostore_server.cli import main
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


def _line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


def spans_to_file(path: str) -> TracerProvider:
    """The SDK's tracer provider, writing each finished span to ``path`` as a JSON line."""
    out = open(path, "a", buffering=1)  # noqa: SIM115 - for the process
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=_line)))
    return provider


if __name__ == "__main__":
    trace.set_tracer_provider(spans_to_file(os.environ["CONVOSTORE_TEST_SPANS"]))
    main(sys.argv[1:])
