"""The server of ``longscan serve`` against slow clients, over real sockets on loopback."""

from __future__ import annotations

import dataclasses
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from longscan.service.server import make_server

WAIT_S = 60.0  # generous: the server's timeouts below are a second or two
REQUEST_TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)


@contextmanager
def serving(app: FastAPI, **limits: float) -> Iterator[tuple[str, int]]:
    """The session's app behind the guarded server on a free loopback port, with ``limits``
    replacing its settings' fields; the scanner is loaded already, so it starts at once."""
    settings = dataclasses.replace(app.state.engine.settings, **limits)
    server = make_server(app, settings, port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    try:
        yield host, port
    finally:
        server.should_exit = True
        thread.join(WAIT_S)


def health(host: str, port: int) -> int:
    connection = http.client.HTTPConnection(host, port, timeout=WAIT_S)
    try:
        connection.request("GET", "/api/health")
        return connection.getresponse().status
    finally:
        connection.close()


def until_closed(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection (raises if it does not): a
    reset counts as closed, as the server may close before reading what was sent."""
    sock.settimeout(WAIT_S)
    received = b""
    with suppress(ConnectionResetError):
        while chunk := sock.recv(4096):
            received += chunk
    return received


def test_connections_that_never_finish_their_head_are_closed_and_health_answers(
    service: tuple[FastAPI, TestClient],
) -> None:
    """Many more half-sent heads than the connection bound (and than uvicorn's concurrency
    limit was): health still answers, and each is closed once its head is late."""
    app, _ = service
    with serving(app, header_timeout_s=1.0, max_connections=64, max_queued=8) as (host, port):
        address = f"{host}:{port}".encode()
        partial = []
        for _ in range(150):
            sock = socket.create_connection((host, port), timeout=WAIT_S)
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: " + address + b"\r\nX-Slow: ")
            partial.append(sock)
        idle = socket.create_connection((host, port), timeout=WAIT_S)  # then one byte more
        idle.sendall(b"GET /api/health HTTP/1.1\r\nHost: " + address + b"\r\n\r\n")
        assert idle.recv(4096).startswith(b"HTTP/1.1 200")
        idle.sendall(b"G")
        assert health(host, port) == 200
        for sock in partial:
            with closing(sock):
                answer = until_closed(sock)
                assert answer in (b"", REQUEST_TIMEOUT_ANSWER), answer
        with closing(idle):  # the rest of its health answer, then the 408
            assert until_closed(idle).endswith(REQUEST_TIMEOUT_ANSWER)
        assert health(host, port) == 200


def test_a_stalled_body_is_dropped_and_a_steady_one_is_not(
    service: tuple[FastAPI, TestClient], data_dir: Path, api_key: str
) -> None:
    app, _ = service
    with serving(app, body_timeout_s=3.0) as (host, port):

        def head(length: int) -> bytes:
            return (
                f"POST /api/documents/text HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"X-API-Key: {api_key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {length}\r\n\r\n"
            ).encode()

        body = b'{"name": "steady.txt", "text": "Sent a little at a time. Yes."}'
        with socket.create_connection((host, port), timeout=WAIT_S) as steady:
            steady.sendall(head(len(body)))
            for start in range(0, len(body), 16):  # well within the timeout between parts
                steady.sendall(body[start : start + 16])
                time.sleep(0.5)
            assert steady.recv(4096).startswith(b"HTTP/1.1 200"), "a steady body was dropped"
        with socket.create_connection((host, port), timeout=WAIT_S) as stalled:
            stalled.sendall(head(1000) + b'{"name": "stalled.txt", "text": "')
            assert until_closed(stalled) == b""
        assert health(host, port) == 200
    assert (data_dir / "uploads" / "steady.txt").exists()
    assert not (data_dir / "uploads" / "stalled.txt").exists()
    assert not list((data_dir / "uploads").glob(".stalled.txt.*"))
