"""A raw ASGI request as uvicorn builds it, for tests that drive the app without a client
(to count body reads, or to disconnect mid-stream)."""

from __future__ import annotations

from typing import Any


def loopback_post(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The scope of ``POST path`` from 127.0.0.1 to a service bound there; ``headers`` follow
    the ``host`` header."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},  # as uvicorn says
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
