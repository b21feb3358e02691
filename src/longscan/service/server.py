"""The HTTP server of ``longscan serve``: uvicorn over h11, guarded against slow clients.

uvicorn's ``limit_concurrency`` counts every open connection, so a few hundred sockets that
never finish a request head make every request 503, health included; and its keep-alive
timer stops at the first byte of a next request, so such a socket stays open for ever. Here
instead:

- a connection must send a request's head within ``header_timeout_s`` of opening, or of
  its previous answer, or it is closed (with a 408 when it had begun one);
- a request body may not stall for ``body_timeout_s`` while the server reads it: the
  connection is closed and the application hears that the client left;
- at most ``max_connections`` are open: a new one closes the connection that has waited
  longest for a request head, and is refused with 503 only when every open one is busy
  with a request.

No limit counts connections or requests beyond that: the application bounds its own work
(the worker's queue, the reading threads) and answers health and the page at once.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Literal, cast

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from longscan.service.settings import ServiceSettings

REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
Awaiting = Literal["head", "body"] | None  # what a connection waits for from its client
TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 5\r\n"
    b"Connection: close\r\n\r\n"
)


class ConnectionGuard:
    """What the connections of one server share: the limits, and the connections waiting
    for a request head, longest waiting first."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.header_timeout_s = settings.header_timeout_s
        self.body_timeout_s = settings.body_timeout_s
        self.max_connections = settings.max_connections
        self.waiting: dict[GuardedH11Protocol, None] = {}  # kept in the order they began


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the timeouts and the bound of a ``ConnectionGuard``."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        guard: ConnectionGuard,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.guard = guard
        self._awaiting: Awaiting = None  # what the timer waits for
        self._timer: asyncio.TimerHandle | None = None
        self._received = 0  # bytes so far: a body that stalls receives none between checks
        self._received_at_check = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.guard.max_connections:
            longest = next(iter(self.guard.waiting), None)
            if longest is None:  # every connection is in a request: this one must wait
                transport.write(TOO_MANY)
                transport.close()
                return
            longest._head_late()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Time what the connection waits for from the client now: a head, or a body."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        awaiting: Awaiting = (
            "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        )
        if awaiting == self._awaiting:  # a head's time runs from its first byte on
            return
        self._stop()
        self._awaiting = awaiting
        if awaiting == "head":
            self.guard.waiting[self] = None
            self._timer = self.loop.call_later(self.guard.header_timeout_s, self._head_late)
        elif awaiting == "body":
            self._received_at_check = self._received
            self._timer = self.loop.call_later(self.guard.body_timeout_s, self._body_check)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._awaiting = None
        self.guard.waiting.pop(self, None)

    def _head_late(self) -> None:
        """Close the connection: its request head is late, or it makes way for a new one.
        A client that began a head hears why; an idle keep-alive one is closed quietly."""
        self._stop()
        if self.conn.trailing_data[0]:
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()

    def _body_check(self) -> None:
        """Close the connection if no body byte came since the last check while the server
        was reading (a paused read, or a 100-continue not yet sent, is the server's doing)."""
        self._timer = None
        waiting_on_server = self.flow.read_paused or (
            self.cycle is not None and self.cycle.waiting_for_100_continue
        )
        if self._received == self._received_at_check and not waiting_on_server:
            self._stop()
            self.transport.close()  # the application's next receive is a disconnect
            return
        self._received_at_check = self._received
        self._timer = self.loop.call_later(self.guard.body_timeout_s, self._body_check)


def make_server(
    app: ASGIApp, settings: ServiceSettings, port: int, log_level: str = "warning"
) -> uvicorn.Server:
    """A uvicorn server of ``app`` on ``settings.host`` and ``port`` (0: a free one), guarded
    by ``settings``' timeouts and connection bound."""
    protocol = functools.partial(GuardedH11Protocol, guard=ConnectionGuard(settings))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=port,
        log_level=log_level,
        http=cast("type[asyncio.Protocol]", protocol),
        ws="none",  # no route is a WebSocket: an upgrade stays plain HTTP, under the guard
    )
    return uvicorn.Server(config)
