"""What OpenTelemetry costs a store call: ``append_message`` unwrapped, wrapped with no provider
installed, and with the SDK recording metrics to memory; the SDK's own span alone, without
the store (the floor of the traces column); and the wrapper's check alone.

    .venvs/core/bin/python benchmarks/telemetry_bench.py [--quick] [--markdown FILE]

The modes run interleaved in one process (a round of each in turn, each first in turn),
medians of the rounds. Times are the process's CPU time a call (``time.process_time``): the
work measured is all on this process's CPU (memory:// and an SQLite file with
``synchronous=NORMAL``), and CPU time does not count the waits a shared machine adds.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from convostore import ConversationStore, telemetry
from opentelemetry import context, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from report import markdown_report

CONTENT = {"type": "text", "text": "The quick brown fox jumps over the lazy dog. " * 4}
UNWRAPPED = ConversationStore.append_message.__wrapped__  # type: ignore[attr-defined]


def per_op(fn: Callable[[], object], n: int) -> float:
    """CPU seconds a call of ``fn``, over ``n`` calls."""
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def _off() -> None:
    telemetry.configure(meter_provider=None, tracer_provider=None)


MODES = ("unwrapped", "no provider", "metrics", "traces", "both")
SPANS = ("bare span", "store's span")
"""No store call: one SDK span started and ended with the two attributes a store call's
span starts with; and that span as the store makes it (made current while the call runs,
its three end attributes set), on the traces column's provider."""


def _modes() -> dict[str, tuple[Callable[[], None], bool | str]]:
    """Each mode: how to set it up, and whether the call goes through the wrapper (or which
    span alone is made). The SDK records to memory: metrics to an in-memory reader, spans
    through a batch processor (as an application exports them) to an in-memory exporter,
    cleared after each round."""
    metrics = MeterProvider(metric_readers=[InMemoryMetricReader()])
    spans = InMemorySpanExporter()
    traces = TracerProvider()
    traces.add_span_processor(BatchSpanProcessor(spans))

    def tracing(**more: object) -> Callable[[], None]:
        def setup() -> None:
            traces.force_flush()
            spans.clear()
            telemetry.configure(tracer_provider=traces, **more)  # type: ignore[arg-type]

        return setup

    return {
        "unwrapped": (_off, False),
        "no provider": (_off, True),
        "metrics": (
            lambda: telemetry.configure(meter_provider=metrics, tracer_provider=None),
            True,
        ),
        "traces": (tracing(meter_provider=None), True),
        "both": (tracing(meter_provider=metrics), True),
        **{name: (tracing(meter_provider=None), name) for name in SPANS},
    }


def _span_alone(store_like: bool) -> None:
    """One span as a store call's, without the call (see ``SPANS``)."""
    tracer = telemetry._current_tracer()
    assert tracer is not None
    span = tracer.start_span(
        "convostore.append_message",
        kind=SpanKind.CLIENT,
        attributes={"db.system.name": "sqlite", "db.operation.name": "append_message"},
    )
    if store_like:
        token = context.attach(trace.set_span_in_context(span))
        context.detach(token)
        span.set_attributes({"convostore.retries": 0, "convostore.rows": 1})
    span.end()


def appends(url: str, rounds: int, n: int) -> dict[str, float]:
    store = ConversationStore(url)
    modes = _modes()
    times: dict[str, list[float]] = {name: [] for name in modes}
    count = 0
    for i in range(rounds):
        names = list(modes)
        for name in names[i % len(names) :] + names[: i % len(names)]:  # each first in turn
            setup, wrapped = modes[name]
            setup()
            cid = f"c{count}"
            count += 1
            if isinstance(wrapped, str):
                times[name].append(per_op(functools.partial(_span_alone, wrapped == SPANS[1]), n))
                continue
            if wrapped:

                def call(cid: str = cid) -> None:
                    store.append_message(conversation_id=cid, role="user", content=CONTENT)

            else:

                def call(cid: str = cid) -> None:
                    UNWRAPPED(store, conversation_id=cid, role="user", content=CONTENT)

            times[name].append(per_op(call, n))
    _off()
    store.close()
    return {name: statistics.median(t) for name, t in times.items()}


def check_alone(rounds: int, n: int) -> tuple[float, float]:
    """Seconds a call of a method doing nothing, bare and wrapped (no provider)."""

    class Nothing:
        def nothing(self) -> None:
            return None

    bare = Nothing()
    wrapped = telemetry._measured(Nothing.nothing, "nothing")
    _off()
    plain: list[float] = []
    checked: list[float] = []
    for _ in range(rounds):
        plain.append(per_op(bare.nothing, n))
        checked.append(per_op(lambda: wrapped(bare), n))
    return statistics.median(plain), statistics.median(checked)


def main() -> None:
    packages = ["convostore", "opentelemetry-api", "opentelemetry-sdk"]
    with (
        markdown_report("What OpenTelemetry costs a store call", packages),
        tempfile.TemporaryDirectory() as tmp,
    ):
        parser = argparse.ArgumentParser()
        parser.add_argument("--quick", action="store_true")
        args = parser.parse_args()
        rounds, n = (10, 100) if args.quick else (100, 150)
        print(
            f"\n### append_message with OpenTelemetry (CPU time a call, medians of {rounds}"
            f" rounds of {n})\n"
        )
        print("| store | unwrapped | no provider | metrics (SDK) | traces (SDK) | both |")
        print("|---|---|---|---|---|---|")
        found = {}
        for label, url in (
            ("memory://", "memory://"),
            ("SQLite file", f"sqlite:///{Path(tmp) / 'bench.db'}"),
        ):
            t = found[label] = appends(url, rounds, n)
            base = t["unwrapped"]
            cells = [f"{base * 1e6:,.1f} µs"]
            cells += [f"{t[m] * 1e6:,.1f} µs ({t[m] / base:.2f}×)" for m in MODES[1:]]
            print(f"| {label} | " + " | ".join(cells) + " |")
        print(
            "\n### Where the traces column's time goes: the SDK's span, measured alone in the"
            " same rounds, and the rest\n"
        )
        print(
            "| store | traces - unwrapped | a bare SDK span (start, end) | the store's span"
            " alone (also made current, end attributes) | the wrapper's own (the rest) |"
            " unwrapped + the store's span alone |"
        )
        print("|---|---|---|---|---|---|")
        for label, t in found.items():
            base, added, alone = t["unwrapped"], t["traces"] - t["unwrapped"], t[SPANS[1]]
            print(
                f"| {label} | {added * 1e6:,.1f} µs | {t[SPANS[0]] * 1e6:,.1f} µs"
                f" | {alone * 1e6:,.1f} µs | {(added - alone) * 1e6:,.1f} µs"
                f" | {(base + alone) / base:.2f}× |"
            )
        plain, checked = check_alone(rounds, n * 20)
        print("\n### The wrapper's check alone (no provider installed)\n")
        print("| a method doing nothing | wrapped | the check costs |")
        print("|---|---|---|")
        print(
            f"| {plain * 1e9:,.0f} ns | {checked * 1e9:,.0f} ns"
            f" | {(checked - plain) * 1e9:,.0f} ns a call |"
        )


if __name__ == "__main__":
    main()
