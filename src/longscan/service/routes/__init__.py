"""The API's routes, one module per group (documents, questions, operations), and what they
share: the engine of the app that serves them, the key check as the schema documents it,
and the status each of the engine's refusals answers with."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader

from longscan.bank.errors import BankBusy, DenseIndexError
from longscan.service.engine import Abandoned, Busy, Engine, TimedOut, UnknownDocument
from longscan.service.limits import key_matches
from longscan.service.metrics import Metrics

API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False)


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


ERROR_STATUS: dict[type[Exception], int] = {
    Busy: 503,
    BankBusy: 503,  # another process (a CLI `bank add`) holds the bank's writer lock
    DenseIndexError: 503,  # dense search over an index that `longscan bank repair` rebuilds
    TimedOut: 504,
    Abandoned: 504,
    UnknownDocument: 404,
    ClientGone: 499,  # nginx's "client closed request": counted, never read
}


def app_engine(request: Request) -> Engine:
    """The engine of the app serving the request."""
    return request.app.state.engine


def app_metrics(request: Request) -> Metrics:
    """The metrics of the app serving the request."""
    return request.app.state.metrics


def authorised(request: Request, key: Annotated[str | None, Depends(API_KEY)]) -> None:
    """The key as the schema documents it (``KeyCheck`` refused a wrong one already)."""
    api_key = app_engine(request).settings.api_key
    if api_key and not key_matches(key, api_key):
        raise HTTPException(401, "a valid X-API-Key header is required")


EngineOf = Annotated[Engine, Depends(app_engine)]
MetricsOf = Annotated[Metrics, Depends(app_metrics)]
GUARDED = [Depends(authorised)]
