"""A span per request: OpenTelemetry's FastAPI instrumentation, the child of the caller's
``traceparent``, the store's spans its children. Its spans go where the store's do: to the
provider given to ``convostore.telemetry.configure``, else to the global one (looked up at each
request, so either may be set before or after the app is made). A request served while there
is neither a tracer provider nor a global meter provider (whose HTTP metrics the
instrumentation records) skips the instrumentation: it would record nothing, at a sixth of
the request's time.

Ids in a request's path can be personal data (a conversation id, a user's memory store): the
span's ``http.target`` and ``http.url`` hold the route's template (``/conversations/
{conversationId}/messages``), as ``http.route`` does, never the path as sent.
"""

from typing import Any

from convostore import telemetry
from fastapi import FastAPI
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.metrics import _internal as metrics_api
from opentelemetry.trace import Span
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send


def _recording() -> bool:
    """Whether the instrumentation would record anything: a span or an HTTP metric (on the
    global meter provider: the instrumentation's meter is the global one's)."""
    meters = metrics_api._METER_PROVIDER
    return telemetry.tracer_provider() is not None or not (
        meters is None or isinstance(meters, NoOpMeterProvider)
    )


class _WhenRecording:
    """The instrumented stack when something records, else the same stack without it.
    (``app`` is the instrumented one: FastAPI looks along the ``app`` attributes for the
    instrumentation's middleware and then makes no span of its own.)"""

    def __init__(self, traced: OpenTelemetryMiddleware) -> None:
        self.app = self.traced = traced
        self.plain: ASGIApp = traced.app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _recording():
            await self.traced(scope, receive, send)
        else:
            await self.plain(scope, receive, send)


def instrument(app: FastAPI) -> None:
    def without_ids(span: Span, scope: dict[str, Any]) -> None:
        if not span.is_recording():
            return
        # the instrumentation has set http.route (the SDK's span shows its attributes)
        attributes = getattr(span, "attributes", None) or {}
        template = str(attributes.get("http.route", "(omitted)"))
        span.set_attribute("http.target", template)
        span.set_attribute("http.url", template)

    FastAPIInstrumentor.instrument_app(
        app,
        exclude_spans=["receive", "send"],
        server_request_hook=without_ids,
        tracer_provider=telemetry.following_tracer_provider(),
    )
    instrumented = app.build_middleware_stack

    def build() -> ASGIApp:
        # The instrumentation's stack: ServerErrorMiddleware(OpenTelemetryMiddleware(the
        # app's own stack)); the middle one is skipped while nothing records.
        stack = instrumented()
        if isinstance(stack, ServerErrorMiddleware) and isinstance(
            stack.app, OpenTelemetryMiddleware
        ):
            stack.app = _WhenRecording(stack.app)
        return stack

    app.build_middleware_stack = build  # type: ignore[method-assign]
