"""The service's Prometheus metrics and the middleware that counts every answer."""

from __future__ import annotations

from fastapi import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longscan.service.engine import Engine

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    """The service's Prometheus metrics, in a registry of its own (apps never share series).

    Every label takes a bounded set of values, so no client can grow the exposition: the
    method is one of the HTTP methods or ``other``, the route the matched route's template or
    ``unmatched``, the status one of the few HTTP defines.
    """

    def __init__(self, engine: Engine) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Summary

        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "longscan_requests",
            "HTTP requests answered.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.ask_seconds = Summary(
            "longscan_ask_seconds", "Seconds to answer a question.", registry=self.registry
        )
        gauges = {
            "longscan_queued": ("Jobs waiting for the worker.", lambda: engine.counts().queued),
            "longscan_running": ("Jobs the worker runs.", lambda: engine.counts().running),
            "longscan_abandoned": (
                "Queued or running jobs whose client gave up.",
                lambda: engine.counts().abandoned,
            ),
            "longscan_reading": ("Uploads being read or waiting to be.", lambda: engine.reading),
            "longscan_documents": ("Documents in the bank.", lambda: engine.document_count),
            "longscan_document_cache_bytes": (
                "Memory held by segmented documents kept for reuse.",
                lambda: engine.documents_bytes,
            ),
        }
        for name, (description, read) in gauges.items():
            Gauge(name, description, registry=self.registry).set_function(read)

    def count(self, method: str, route: str, status: int) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()

    def exposition(self) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class CountRequests:
    """Counts every answer, refusals by the guards included, by method, route and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the server answers when the app fails before it starts one

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.count(scope["method"], route, status)
