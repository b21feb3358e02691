"""``/api/health`` (no key) and ``/metrics`` (Prometheus' text format, behind the key)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from longscan import __version__
from longscan.service.routes import GUARDED, EngineOf, MetricsOf
from longscan.service.schemas import Health

router = APIRouter(tags=["operations"])


@router.get("/api/health")
async def health(engine: EngineOf) -> Health:
    """Liveness without a key: answers even while the scanner is busy, and says what the
    worker holds (abandoned work included, until it stops)."""
    counts = engine.counts()
    return Health(
        status="ok",
        version=__version__,
        documents=engine.document_count,
        queued=counts.queued,
        running=counts.running,
        abandoned=counts.abandoned,
        reading=engine.reading,
        llm=None if engine.answerer is None else engine.answerer.name,
    )


@router.get(
    "/metrics",
    dependencies=GUARDED,
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}},
)
async def prometheus_metrics(metrics: MetricsOf) -> Response:
    """Request counts, question latency and the queue, in Prometheus' text format."""
    return metrics.exposition()
