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


if __name__ == "__main__":
    out = open(os.environ["CONVOSTORE_TEST_SPANS"], "a", buffering=1)  # noqa: SIM115 - for the process
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=_line)))
    trace.set_tracer_provider(provider)
    main(sys.argv[1:])
