"""A span per request: OpenTelemetry's FastAPI instrumentation, the child of the caller's
``traceparent``, the store's spans its children. Its spans go where the store's do: to the
provider given to ``convostore.telemetry.configure``, else to the global one (looked up at each
request, so either may be set before or after the app is made).

Ids in a request's path can be personal data (a conversation id, a user's memory store): the
span's ``http.target`` and ``http.url`` hold the route's template (``/conversations/
{conversationId}/messages``), as ``http.route`` does, never the path as sent.
"""

from typing import Any

from convostore import telemetry
from fastapi import FastAPI
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.trace import Span


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
