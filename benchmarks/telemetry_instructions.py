"""Instructions an ``append_message`` to memory:// takes with tracing on, against the same
append unwrapped and one OpenTelemetry SDK span alone, counted by valgrind's callgrind (a cost
the machine's load does not move; ``telemetry_bench.py`` measures CPU time)::

    .venvs/core/bin/python benchmarks/telemetry_instructions.py [--src packages/core/src]

Each mode is counted with ``N`` calls and with none, and the difference divided by ``N``. The
spans go through a ``BatchSpanProcessor`` to an ``InMemorySpanExporter`` (their export is
counted: the provider is shut down at the end of both runs). Needs valgrind.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from instructions import callgrind

N = 600
CONTENT = {"type": "text", "text": "The quick brown fox jumps over the lazy dog. " * 4}
MODES = {
    "unwrapped": "append_message unwrapped",
    "no provider": "append_message through the wrapper, no provider installed",
    "traces": "append_message traced",
    "bare span": "a bare SDK span (start with two attributes, end)",
    "store's span": "the span as the store makes it (also current, two end attributes)",
}


def run(mode: str, n: int) -> None:
    """``n`` calls of ``mode`` (inside valgrind)."""
    from convostore import ConversationStore, telemetry
    from opentelemetry import context, trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    tracer = provider.get_tracer(telemetry.SCOPE)
    store = ConversationStore("memory://")
    unwrapped = ConversationStore.append_message.__wrapped__  # type: ignore[attr-defined]
    if mode == "traces":
        telemetry.configure(tracer_provider=provider)
    for i in range(20):  # the first calls' one-time work, in both counts
        store.append_message(conversation_id=f"w{i}", role="user", content=CONTENT)
        tracer.start_span("warm").end()
    for i in range(n):
        if mode == "unwrapped":
            unwrapped(store, conversation_id=f"c{i}", role="user", content=CONTENT)
        elif mode in ("traces", "no provider"):
            store.append_message(conversation_id=f"c{i}", role="user", content=CONTENT)
        else:
            span = tracer.start_span(
                "convostore.append_message",
                kind=SpanKind.CLIENT,
                attributes={"db.system.name": "sqlite", "db.operation.name": "append_message"},
            )
            if mode == "store's span":
                token = context.attach(trace.set_span_in_context(span))
                context.detach(token)
                span.set_attributes({"convostore.retries": 0, "convostore.rows": 1})
            span.end()
    telemetry.configure(tracer_provider=None)
    provider.shutdown()
    store.close()


def count(src: Path, mode: str, n: int) -> int:
    """Instructions of ``n`` calls of ``mode`` and everything around them."""
    return callgrind(__file__, ["--run", mode, str(n)], src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("packages/core/src"))
    parser.add_argument("--run", nargs=2, help=argparse.SUPPRESS)  # inside valgrind
    args = parser.parse_args()
    if args.run is not None:
        run(args.run[0], int(args.run[1]))
        return
    print("| what | instructions a call | against unwrapped |\n|---|---|---|")
    unwrapped = None
    for mode, label in MODES.items():
        each = (count(args.src, mode, N) - count(args.src, mode, 0)) / N
        unwrapped = unwrapped or each
        print(f"| {label} | {each / 1000:,.1f}k | {each / unwrapped:.3f}× |", flush=True)


if __name__ == "__main__":
    main()
