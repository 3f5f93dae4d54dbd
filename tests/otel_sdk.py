"""OpenTelemetry's real SDK recording to memory, for the telemetry tests of every package:
a tracer provider whose spans an in-memory exporter keeps, a meter provider an in-memory
reader reads, each given to ``convostore.telemetry.configure`` and taken back after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from convostore import telemetry
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@contextmanager
def recording_spans() -> Iterator[InMemorySpanExporter]:
    """Every span the store and the adapters make, kept in the exporter yielded."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    try:
        yield exporter
    finally:
        telemetry.configure(tracer_provider=None, conversation_id="omit")
        provider.shutdown()


@contextmanager
def reading_metrics() -> Iterator[InMemoryMetricReader]:
    """Every metric the store records, read by the reader yielded."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    telemetry.configure(meter_provider=provider)
    try:
        yield reader
    finally:
        telemetry.configure(meter_provider=None)
        provider.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    """Each data point of the metric ``name``, by its sorted attributes."""
    found: dict[tuple[tuple[str, Any], ...], Any] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[tuple(sorted((point.attributes or {}).items()))] = point
    return found
