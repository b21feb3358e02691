"""Request guards that sit in front of the application: body size and upload names."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_NAME_BYTES = 200  # file systems allow 255; the partial upload's suffix needs the rest


class UnsafeName(ValueError):
    """An upload name that could point outside the upload folder, or that is no file name."""


def upload_path(folder: Path, name: str) -> Path:
    """Where the upload called ``name`` is stored: always a direct child of ``folder``.

    Names with path separators, ``..``, a drive, NUL or other control characters are
    rejected rather than rewritten, so the stored name is the one the user chose.

    Raises:
        UnsafeName: the name is empty, too long, or could escape ``folder``.
    """
    if not name or not name.strip():
        raise UnsafeName("the file needs a name")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeName("the file name is not valid Unicode") from None
    if len(encoded) > MAX_NAME_BYTES:
        raise UnsafeName(f"the file name is over {MAX_NAME_BYTES} bytes")
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise UnsafeName("the file name holds control characters (NUL, newline, ...)")
    if "/" in name or "\\" in name or ":" in name:
        raise UnsafeName(f"{name!r}: a file name, not a path (no '/', '\\' or ':')")
    if name in (".", "..") or name.startswith(".."):
        raise UnsafeName(f"{name!r}: names may not start with '..'")
    root = folder.resolve()
    path = (root / name).resolve()
    if path.parent != root:
        raise UnsafeName(f"{name!r} would be stored outside the upload folder")
    return path


class BodyLimit:
    """Answers 413 to a request whose body is over ``max_bytes``.

    A declared ``Content-Length`` over the limit is refused before anything is read; a body
    without one (chunked) is counted as it arrives and refused once it passes the limit.
    The body is buffered (it is at most ``max_bytes``) and replayed to the application, so
    no handler ever sees a body that is cut short.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        messages: list[Message] = []
        received = 0
        more = True
        while more:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                await self._refuse(send)
                return
            more = message.get("more_body", False)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body: dict[str, Any] = {
            "detail": f"the request body is over the {self.max_bytes:,}-byte limit"
        }
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})
