"""OpenTelemetry for every public store call, applied in one place: ``instrument`` wraps the
methods of ``ConversationStore`` named in ``OPERATIONS`` (the async store runs the same ones).

With ``convostore[otel]`` (the ``opentelemetry-api`` package) and a meter provider installed
(the application's SDK, or ``configure(meter_provider=...)``), each call records its time in
the histogram ``convostore.call.duration``, by method, database system and error type: its
count is the number of calls (one instrument, as OpenTelemetry's own database conventions
have it: a counter beside it would double the SDK's cost of a call for the same number). Without the package nothing is wrapped; with it and no provider, a call costs
one check of two module globals more.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

try:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.metrics import _internal as _metrics_api

    AVAILABLE = True
except ImportError:  # pragma: no cover - without the otel extra
    AVAILABLE = False

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider

F = TypeVar("F", bound=Callable[..., Any])

OPERATIONS = (
    "append_message",
    "append_messages",
    "get_messages",
    "get_message",
    "get_history",
    "get_contents",
    "pop_message",
    "update_message",
    "delete_message",
    "clear_messages",
    "existing_message_ids",
    "sync_messages",
    "start_sync_messages",
    "get_conversation",
    "list_conversations",
    "update_conversation",
    "fork_conversation",
    "delete_conversation",
    "delete_user_data",
    "find_conversations",
    "delete_conversations",
    "get_changes",
    "wait_for_change",
    "attach_memory_stores",
    "detach_memory_stores",
    "attached_memory_stores",
    "create_memory_store",
    "get_memory_store",
    "list_memory_stores",
    "delete_memory_store",
    "create_memory",
    "list_memories",
    "get_memory",
    "get_memory_by_path",
    "update_memory",
    "delete_memory",
    "list_memory_versions",
    "get_memory_version",
    "redact_memory_version",
    "search_messages",
    "search_memories",
    "reindex",
    "vacuum",
)
"""The public store calls, each measured (and traced) as ``convostore.<name>``."""

SCOPE = "convostore"
"""The instrumentation scope's name (the meter's and the tracer's)."""

# Bucket bounds of the duration histogram, in seconds: 100 µs to 10 s.
DURATION_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("convostore_call", default=False)
"""True within a measured call: the calls it makes of other public methods are its own work."""


class _Settings:
    meter_provider: MeterProvider | None = None


_settings = _Settings()


def configure(*, meter_provider: MeterProvider | None = None) -> None:
    """Use ``meter_provider`` for the store's metrics instead of OpenTelemetry's global one
    (None: the global one again)."""
    _settings.meter_provider = meter_provider
    _instruments.cache_clear()


def _meter_provider() -> MeterProvider | None:
    """The meter provider to record to, or None (then nothing is recorded)."""
    provider = _settings.meter_provider or _metrics_api._METER_PROVIDER
    if provider is None or isinstance(provider, NoOpMeterProvider):
        return None
    return provider


@functools.lru_cache(maxsize=4)
def _instruments(provider: MeterProvider) -> Histogram:
    return provider.get_meter(SCOPE).create_histogram(
        "convostore.call.duration",
        unit="s",
        description="The time a public store call took (its count: the calls), by method",
        explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
    )


def _measured(method: F, name: str) -> F:
    @functools.wraps(method)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        if _settings.meter_provider is None and _metrics_api._METER_PROVIDER is None:
            return method(self, *args, **kwargs)  # no provider: the one check
        provider = _meter_provider()
        if provider is None or _inside.get():
            return method(self, *args, **kwargs)
        duration = _instruments(provider)
        attributes = {"convostore.method": name, "db.system.name": self.backend.dialect}
        token = _inside.set(True)
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            attributes["error.type"] = type(exc).__qualname__
            raise
        finally:
            _inside.reset(token)
            duration.record(time.perf_counter() - start, attributes)

    return call  # type: ignore[return-value]


def instrument(cls: type) -> None:
    """Wrap each method of ``cls`` named in ``OPERATIONS`` (once; nothing without the API)."""
    if not AVAILABLE:
        return
    for name in OPERATIONS:
        setattr(cls, name, _measured(getattr(cls, name), name))
