"""OpenTelemetry for every public store call, applied in one place: ``instrument`` wraps the
methods of ``ConversationStore`` named in ``OPERATIONS`` (the async store runs the same ones).

With ``convostore[otel]`` (the ``opentelemetry-api`` package) and a tracer provider installed
(the application's SDK, or ``configure(tracer_provider=...)``), each call is a span
``convostore.<method>`` with the database system, the rows it returned or wrote and, by a
setting, its conversation id hashed (omitted by default). With a meter provider, each call records its time in
the histogram ``convostore.call.duration``, by method, database system and error type: its
count is the number of calls (one instrument, as OpenTelemetry's own database conventions
have it: a counter beside it would double the SDK's cost of a call for the same number). Without the package nothing is wrapped; with it and no provider, a call costs
one check of three module globals more, and no span object is made.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import functools
import hashlib
import inspect
import os
import time
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

try:
    from opentelemetry import context as _context_api
    from opentelemetry import trace as _trace_api
    from opentelemetry.metrics import NoOpMeterProvider, Observation
    from opentelemetry.metrics import _internal as _metrics_api
    from opentelemetry.trace import NoOpTracerProvider, SpanKind, Status, StatusCode
    from opentelemetry.trace import Tracer as _Tracer
    from opentelemetry.trace import TracerProvider as _TracerProvider

    AVAILABLE = True
except ImportError:  # pragma: no cover - without the otel extra
    AVAILABLE = False

from .backends.base import WouldBlock
from .errors import MemoryValidationError

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

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
    "find_conversation_briefs",
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


class Counts:
    """What a traced store call cost its database, told by the backend: ``round_trips`` (a
    server database's; None on SQLite, which has none) and ``retries`` (attempts run again
    after a busy database, a serialization failure, a deadlock or a lost connection)."""

    __slots__ = ("retries", "round_trips")

    def __init__(self) -> None:
        self.round_trips: int | None = None
        self.retries: int | None = None  # None: no transaction was run

    def add(self, round_trips: int | None = None, retries: int = 0) -> None:
        if round_trips is not None:
            self.round_trips = (self.round_trips or 0) + round_trips
        self.retries = (self.retries or 0) + retries


_call: contextvars.ContextVar[Counts | bool] = contextvars.ContextVar(
    "convostore_call", default=False
)
"""Within a measured call: its ``Counts`` where a span records it, else True (False outside
one). The calls it makes of other public methods are its own work."""


def counting() -> Counts | None:
    """The counts of the store call a span is recording, for its backend to ``add`` to (None,
    the usual case, when no span records one: then nothing is counted)."""
    counts = _call.get()
    return counts if isinstance(counts, Counts) else None


ConversationIds = Literal["omit", "hash"]
CONVERSATION_ID_ENV = "CONVOSTORE_OTEL_CONVERSATION_ID"
"""``omit`` (the default) or ``hash``: what a span says of the conversation it names."""


def _conversation_ids(value: object) -> ConversationIds:
    if value not in ("omit", "hash"):
        raise MemoryValidationError(
            f"conversation_id must be 'omit' or 'hash', got {value!r}", argument="conversation_id"
        )
    return value


def _conversation_ids_from_env() -> ConversationIds:
    return _conversation_ids(os.environ.get(CONVERSATION_ID_ENV) or "omit")


class _Settings:
    meter_provider: MeterProvider | None = None
    tracer_provider: TracerProvider | None = None
    conversation_id: ConversationIds = _conversation_ids_from_env()
    configured = False  # a provider is configured here (else: the global ones alone)


_settings = _Settings()


class _Unchanged(enum.Enum):
    UNCHANGED = "unchanged"


UNCHANGED = _Unchanged.UNCHANGED
"""A ``configure`` argument left as it was."""


def configure(
    *,
    meter_provider: MeterProvider | _Unchanged | None = UNCHANGED,
    tracer_provider: TracerProvider | _Unchanged | None = UNCHANGED,
    conversation_id: ConversationIds | _Unchanged = UNCHANGED,
) -> None:
    """Record the store's metrics to ``meter_provider`` and its spans to ``tracer_provider``
    instead of OpenTelemetry's global providers (None: the global one again); an argument not
    given stays as it was. ``conversation_id``: ``"omit"`` (the default, or
    ``$CONVOSTORE_OTEL_CONVERSATION_ID``) leaves conversation ids out of spans; ``"hash"``
    puts the first 16 hex digits of their SHA-256 in ``convostore.conversation_id.hash`` (ids
    can be personal data: a hash lets you follow one conversation across spans, yet an id
    that can be guessed can be found from it)."""
    if conversation_id is not UNCHANGED:
        _settings.conversation_id = _conversation_ids(conversation_id)
    if meter_provider is not UNCHANGED:
        _settings.meter_provider = meter_provider
    if tracer_provider is not UNCHANGED:
        _settings.tracer_provider = tracer_provider
    configured = (_settings.meter_provider, _settings.tracer_provider)
    _settings.configured = configured != (None, None)
    _instruments.cache_clear()
    if AVAILABLE and _settings.meter_provider is not None:
        instruments()  # the observed ones report from the first reading on


def _meter_provider() -> MeterProvider | None:
    """The meter provider to record to, or None (then nothing is recorded)."""
    provider = _settings.meter_provider or _metrics_api._METER_PROVIDER
    if provider is None or isinstance(provider, NoOpMeterProvider):
        return None
    return provider


def _tracer_provider() -> TracerProvider | None:
    """The tracer provider to record spans to, or None (then no span is made)."""
    provider = _settings.tracer_provider or _trace_api._TRACER_PROVIDER
    if provider is None or isinstance(provider, NoOpTracerProvider):
        return None
    return provider


def tracer_provider() -> TracerProvider | None:
    """The tracer provider the store's spans go to (configured, else the global one; None
    without one or without the ``otel`` extra)."""
    return _tracer_provider() if AVAILABLE else None


def meter_provider() -> MeterProvider | None:
    """The meter provider the store records to (configured, else the global one; None
    without one or without the ``otel`` extra): for the instruments of what runs around the
    store, a server's."""
    return _meter_provider() if AVAILABLE else None


class Instruments(NamedTuple):
    """The store's instruments on one meter provider."""

    duration: Histogram
    queue_wait: Histogram
    one_statement: Counter


@functools.lru_cache(maxsize=4)
def _instruments(provider: MeterProvider) -> Instruments:
    meter = provider.get_meter(SCOPE)
    if provider not in _observing:  # once per provider (this cache is cleared by configure)
        _observing.add(provider)
        for name, unit, description in OBSERVED:
            meter.create_observable_up_down_counter(
                name,
                callbacks=[functools.partial(_observe, name)],
                unit=unit,
                description=description,
            )
    return Instruments(
        duration=meter.create_histogram(
            "convostore.call.duration",
            unit="s",
            description="The time a public store call took (its count: the calls), by method",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        ),
        queue_wait=meter.create_histogram(
            "convostore.sqlite.queue.wait",
            unit="s",
            description="The time a SQLite write waited for its turn among the file's writers",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        ),
        one_statement=meter.create_counter(
            "convostore.append.one_statement",
            unit="{append}",
            description="Appends to a server database by outcome of the one-statement path:"
            " hit (one round trip), miss (the row had changed: the locking path after it),"
            " skipped (not tried: the locking path alone)",
        ),
    )


def instruments() -> Instruments | None:
    """The store's instruments where a meter provider is set (None otherwise, at the cost of
    one check), for a backend's measurements."""
    if not AVAILABLE or (not _settings.configured and _metrics_api._METER_PROVIDER is None):
        return None
    provider = _meter_provider()
    return None if provider is None else _instruments(provider)


def one_statement(
    path: Literal["append", "sync"], outcome: Literal["hit", "miss", "skipped"]
) -> None:
    """Count an outcome of the one-statement path (where metrics are recorded): ``path`` is
    ``append`` (``append_messages``) or ``sync`` (``start_sync_messages``, counted at
    ``confirm``: hits and misses only, a sync that is no append never takes it)."""
    measured = instruments()
    if measured is not None:
        measured.one_statement.add(1, {"convostore.path": path, "convostore.outcome": outcome})


# -- what is observed when the metrics are read: connection pools, replicas ------------------

OBSERVED = (
    ("db.client.connection.count", "{connection}", "Connections of a pool, by state (used, idle)"),
    ("db.client.connection.max", "{connection}", "The most connections a pool may open"),
    (
        "db.client.connection.pending_requests",
        "{request}",
        "Calls waiting for a connection of a pool",
    ),
    ("convostore.replica.lag", "By", "The WAL a replica has still to replay, in bytes"),
)
"""The observed instruments (OpenTelemetry's database client conventions for the pools)."""

_watched: weakref.WeakSet[Any] = weakref.WeakSet()
_observing: weakref.WeakSet[Any] = weakref.WeakSet()  # providers holding the observers


def watch(source: Any) -> None:
    """Read ``source.observe()`` (``(instrument name, value, attributes)`` triples) whenever
    the metrics are read, for as long as ``source`` lives: a backend's pool and replicas."""
    _watched.add(source)


def _observe(name: str, options: Any) -> Iterator[Any]:
    for source in list(_watched):
        for observed, value, attributes in source.observe():
            if observed == name:
                yield Observation(value, attributes)


_tracing: tuple[object, Tracer | None] = (None, None)  # the last provider seen, its tracer


def _current_tracer() -> Tracer | None:
    """The store's tracer on the provider its spans go to, or None (then no span is made):
    looked up once a provider, then one identity check a call."""
    global _tracing  # noqa: PLW0603 - a cache of one entry, replaced whole
    provider = _settings.tracer_provider or _trace_api._TRACER_PROVIDER
    seen, tracer = _tracing
    if provider is not seen:
        found = _tracer_provider()
        tracer = None if found is None else found.get_tracer(SCOPE)
        _tracing = (provider, tracer)
    return tracer


def _rows(result: object) -> int | None:
    """The rows a call returned or wrote, for a span: a list's length, a page's items, a
    count; None where the result says nothing of rows."""
    if isinstance(result, list):
        return len(result)
    items = getattr(result, "items", None)
    if isinstance(items, list):
        return len(items)
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    if isinstance(result, str):  # an id: one row written
        return 1
    return None


def _span_attributes(name: str, system: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"db.system.name": system, "db.operation.name": name}
    cid = kwargs.get("conversation_id")
    if _settings.conversation_id == "hash" and isinstance(cid, str):
        digest = hashlib.sha256(cid.encode("utf-8", "surrogatepass")).hexdigest()
        attributes["convostore.conversation_id.hash"] = digest[:16]
    return attributes


def _ended(counts: Counts, rows: int | None) -> dict[str, int]:
    """A span's attributes known at its end: the call's rows, retries and round trips."""
    attributes: dict[str, int] = {}
    if counts.round_trips is not None:
        attributes["convostore.round_trips"] = counts.round_trips
    if counts.retries is not None:
        attributes["convostore.retries"] = counts.retries
    if rows is not None:
        attributes["convostore.rows"] = rows
    return attributes


def _measured(method: F, name: str) -> F:
    span_name = f"convostore.{name}"

    @functools.wraps(method)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        if (
            not _settings.configured
            and _metrics_api._METER_PROVIDER is None
            and _trace_api._TRACER_PROVIDER is None
        ):
            return method(self, *args, **kwargs)  # no provider: the one check
        if _call.get():
            return method(self, *args, **kwargs)  # another call's own work
        meters, tracer = _meter_provider(), _current_tracer()
        if meters is None and tracer is None:
            return method(self, *args, **kwargs)
        system = self.backend.dialect
        if tracer is None:
            token = _call.set(True)
            try:
                return _timed(
                    meters, name, system, functools.partial(method, self, *args, **kwargs)
                )
            finally:
                _call.reset(token)
        # The span started with what is known at its start, made current by hand, its end
        # attributes set at once: each step of start_as_current_span's context managers and
        # each set_attribute (the span's lock) costs a few microseconds of an append's 60
        span = tracer.start_span(
            span_name, kind=SpanKind.CLIENT, attributes=_span_attributes(name, system, kwargs)
        )
        counts = Counts()
        token = _call.set(counts)  # after the SDK's start (a sampler may raise), before the try
        current = _context_api.attach(_trace_api.set_span_in_context(span))
        rows = None
        try:
            if meters is None:
                result = method(self, *args, **kwargs)
            else:
                result = _timed(
                    meters, name, system, functools.partial(method, self, *args, **kwargs)
                )
        except BaseException as exc:
            _failed(span, exc)
            raise
        else:
            rows = _rows(result)
            return result
        finally:
            _context_api.detach(current)
            _call.reset(token)
            span.set_attributes(_ended(counts, rows))
            span.end()

    return call  # type: ignore[return-value]


def _timed(meters: MeterProvider | None, name: str, system: str, run: Callable[[], Any]) -> Any:
    """``run()``, its time recorded where a meter provider is set."""
    if meters is None:
        return run()
    attributes = {"convostore.method": name, "db.system.name": system}
    start = time.perf_counter()
    try:
        result = run()
    except WouldBlock:
        raise  # not a call: the attempt on the event loop, made again on a thread
    except BaseException as exc:
        attributes["error.type"] = type(exc).__qualname__
        _instruments(meters).duration.record(time.perf_counter() - start, attributes)
        raise
    _instruments(meters).duration.record(time.perf_counter() - start, attributes)
    return result


def _failed(span: Any, exc: BaseException) -> None:
    """Mark ``span`` with the exception that ended it; an attempt on the event loop that gave
    way to a worker thread (``WouldBlock``: nothing was done) is said so, not as an error."""
    if isinstance(exc, WouldBlock):
        span.set_attribute("convostore.gave_way", True)
        return
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def instrument(cls: type) -> None:
    """Wrap each method of ``cls`` named in ``OPERATIONS`` (once; nothing without the API)."""
    if not AVAILABLE:
        return
    for name in OPERATIONS:
        setattr(cls, name, _measured(getattr(cls, name), name))


# -- the spans of what runs around the store: adapters' framework calls, a server's requests --


def trace_methods(
    cls: type,
    prefix: str,
    names: Iterable[str],
    attributes: Callable[[Any], dict[str, Any]] | None = None,
) -> None:
    """Make each method of ``cls`` named in ``names`` a span ``<prefix>.<name>`` (an adapter's
    framework calls: ``langgraph.put``, ``openai_session.add_items``), the parent of the
    store's spans it causes. Plain, ``async`` and generator methods (a generator's span lasts
    while it is iterated). ``attributes(self)`` gives the span's attributes. The span records
    the call's rows (as the store's do) and its exception. Nothing without the API; with no
    tracer provider a call costs one check more and makes no span object."""
    if not AVAILABLE:
        return
    for name in names:
        method = getattr(cls, name)
        setattr(cls, name, _spanned(method, f"{prefix}.{name}", attributes))


def _spanned(method: F, span_name: str, attributes: Callable[[Any], dict[str, Any]] | None) -> F:
    def start(self: Any) -> Any:
        """The span to run in, or None (no provider)."""
        tracer = _current_tracer()
        if tracer is None:
            return None
        given = attributes(self) if attributes is not None else None
        return tracer.start_span(span_name, attributes=given)

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def call_async(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            if _settings.tracer_provider is None and _trace_api._TRACER_PROVIDER is None:
                return await method(self, *args, **kwargs)
            span = start(self)
            if span is None:
                return await method(self, *args, **kwargs)
            with _trace_api.use_span(
                span, end_on_exit=True, record_exception=False, set_status_on_exception=False
            ):
                try:
                    result = await method(self, *args, **kwargs)
                except BaseException as exc:
                    _failed(span, exc)
                    raise
                _set_rows(span, result)
                return result

        return call_async  # type: ignore[return-value]

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def call_iter(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            if _settings.tracer_provider is None and _trace_api._TRACER_PROVIDER is None:
                return method(self, *args, **kwargs)
            return _spanned_items(lambda: start(self), method(self, *args, **kwargs))

        return call_iter  # type: ignore[return-value]

    @functools.wraps(method)
    def call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        if _settings.tracer_provider is None and _trace_api._TRACER_PROVIDER is None:
            return method(self, *args, **kwargs)
        span = start(self)
        if span is None:
            return method(self, *args, **kwargs)
        with _trace_api.use_span(
            span, end_on_exit=True, record_exception=False, set_status_on_exception=False
        ):
            try:
                result = method(self, *args, **kwargs)
            except BaseException as exc:
                _failed(span, exc)
                raise
            _set_rows(span, result)
            return result

    return call  # type: ignore[return-value]


def _set_rows(span: Any, result: object) -> None:
    rows = _rows(result)
    if rows is not None:
        span.set_attribute("convostore.rows", rows)


def _spanned_items(start: Callable[[], Any], items: Generator[Any]) -> Iterator[Any]:
    """``items``, each step taken inside one span (started at the first step, in the
    context of whoever iterates; ended when they run out, fail or are closed)."""
    span = start()
    if span is None:
        yield from items
        return
    rows = 0
    try:
        while True:
            with _trace_api.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                try:
                    item = next(items)
                except StopIteration:
                    return
            rows += 1
            yield item
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):  # GeneratorExit: the caller stopped early
            _failed(span, exc)
        raise
    finally:
        items.close()
        span.set_attribute("convostore.rows", rows)  # the items given
        span.end()


if AVAILABLE:

    class _FollowingTracer(_Tracer):
        """Starts each span on the provider the store's spans go to at that moment."""

        def __init__(self, name: str, version: str | None, schema_url: str | None) -> None:
            self._args = (name, version, schema_url)
            self._cached: tuple[object, _Tracer] | None = None

        def _tracer(self) -> _Tracer:
            provider = _settings.tracer_provider or _trace_api.get_tracer_provider()
            cached = self._cached
            if cached is None or cached[0] is not provider:
                cached = self._cached = (provider, provider.get_tracer(*self._args))
            return cached[1]

        def start_span(self, *args: Any, **kwargs: Any) -> Any:
            return self._tracer().start_span(*args, **kwargs)

        @contextlib.contextmanager
        def start_as_current_span(  # type: ignore[override]
            self, *args: Any, **kwargs: Any
        ) -> Iterator[Any]:
            with self._tracer().start_as_current_span(*args, **kwargs) as span:
                yield span

    class _FollowingTracerProvider(_TracerProvider):
        def get_tracer(
            self,
            instrumenting_module_name: str,
            instrumenting_library_version: str | None = None,
            schema_url: str | None = None,
            attributes: Any = None,
        ) -> _Tracer:
            return _FollowingTracer(
                instrumenting_module_name, instrumenting_library_version, schema_url
            )


def following_tracer_provider() -> TracerProvider:
    """A tracer provider whose spans go where the store's do (``configure``'s provider, else
    the global one, looked up at each span): for the spans around the store (a server's
    requests), so that they and the store's share one trace whichever way the provider was
    given. Needs the ``otel`` extra."""
    return _FollowingTracerProvider()
