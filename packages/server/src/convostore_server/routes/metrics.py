"""``GET /metrics``: the store's OpenTelemetry metrics in Prometheus's text format, for an
admin's token only (a scraper is given one).

The process reads the store's metrics with a meter provider of its own (the OpenTelemetry SDK
and its Prometheus reader, into a registry of its own), made once per process.
"""

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from convostore import telemetry
from fastapi import APIRouter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import MeterProvider as AnyMeterProvider
from opentelemetry.metrics import UpDownCounter
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.responses import Response

from ..errors import ApiError


@functools.cache
def registry() -> CollectorRegistry:
    """This process's registry, fed by the store's metrics (made, and wired, once)."""
    collected = CollectorRegistry(auto_describe=True)
    provider = MeterProvider(
        metric_readers=[PrometheusMetricReader(disable_target_info=True, registry=collected)]
    )
    telemetry.configure(meter_provider=provider)
    return collected


@functools.lru_cache(maxsize=4)
def _subscribers(provider: AnyMeterProvider) -> UpDownCounter:
    return provider.get_meter("convostore_server").create_up_down_counter(
        "convostore_server.sse.subscribers",
        unit="{subscriber}",
        description="Event streams (Server-Sent Events) open in this process",
    )


@contextlib.contextmanager
def subscribed() -> Iterator[None]:
    """Count an open event stream in ``convostore_server.sse.subscribers`` while it lasts
    (where the store's metrics are recorded)."""
    provider = telemetry.meter_provider()
    gauge = None if provider is None else _subscribers(provider)
    if gauge is not None:
        gauge.add(1)
    try:
        yield
    finally:
        if gauge is not None:
            gauge.add(-1)


def routes(router: APIRouter, Who: Any) -> None:
    registry()

    @router.get(
        "/metrics",
        tags=["operations"],
        response_class=Response,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def get_metrics(*, who: Who) -> Response:
        """The store's calls and their durations by method and database
        (``convostore_call_duration_seconds``, whose ``_count`` is the calls), the database's
        own numbers (PostgreSQL: ``db_client_connection_*`` of its pools,
        ``convostore_append_one_statement_total``, ``convostore_replica_lag_bytes``; SQLite:
        ``convostore_sqlite_queue_wait_seconds``) and the open event streams
        (``convostore_server_sse_subscribers``), in Prometheus's text format. Admins only."""
        if not who.principal.admin:
            raise ApiError(403, "forbidden", "metrics are read with an admin's token")
        return Response(generate_latest(registry()), media_type=CONTENT_TYPE_LATEST)
