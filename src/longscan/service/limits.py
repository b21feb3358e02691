"""Request guards that sit in front of the application: who may write, with which key, how
large a body, and which upload names.

Every guard here answers before the body is read, so a refused request costs the server
nothing but its headers: a client without the key cannot make it buffer a body.
"""

from __future__ import annotations

import json
import secrets
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_NAME_BYTES = 200  # file systems allow 255; the partial upload's suffix needs the rest
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Marks that reorder how text is displayed: "exe.txt" can show as "txt.exe" and the like.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Characters that show as nothing, beyond the format characters (Unicode category Cf): the
# default-ignorable letters, marks and fillers, so "report.txt" cannot hide a twin.
INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
# Categories no file name needs: format (invisible), private use, unassigned, line and
# paragraph separators.
INVISIBLE_CATEGORIES = frozenset({"Cf", "Co", "Cn", "Zl", "Zp"})
DEFAULT_PORTS = {"http": 80, "https": 443}


class UnsafeName(ValueError):
    """An upload name that could point outside the upload folder, or that is no file name."""


def upload_path(folder: Path, name: str) -> Path:
    """Where the upload called ``name`` is stored: always a direct child of ``folder``.

    Names with path separators, ``..``, a drive, NUL or other control characters,
    bidirectional controls or other invisible characters (which make a name display as
    another), or white space at either end are rejected rather than rewritten, so the stored
    name is the one the user chose and the one they see.

    Raises:
        UnsafeName: the name is empty, too long, misleading, or could escape ``folder``.
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
    bidi = _code_points(ch for ch in name if ch in BIDI_CONTROLS)
    if bidi:
        raise UnsafeName(
            f"the file name holds bidirectional controls ({bidi}), "
            "which make it display as another name"
        )
    invisible = _code_points(
        ch for ch in name if ch in INVISIBLE or unicodedata.category(ch) in INVISIBLE_CATEGORIES
    )
    if invisible:
        raise UnsafeName(
            f"the file name holds invisible or unassigned characters ({invisible}), "
            "which make it look like another name"
        )
    if name != name.strip():
        raise UnsafeName(f"{name!r}: the file name starts or ends with white space")
    if "/" in name or "\\" in name or ":" in name:
        raise UnsafeName(f"{name!r}: a file name, not a path (no '/', '\\' or ':')")
    if name == ".":
        raise UnsafeName("'.' names the upload folder itself, not a file")
    if name.startswith(".."):
        raise UnsafeName(f"{name!r}: names may not start with '..'")
    root = folder.resolve()
    path = (root / name).resolve()
    if path.parent != root:
        raise UnsafeName(f"{name!r} would be stored outside the upload folder")
    return path


def _code_points(characters: Iterable[str]) -> str:
    """``U+200B, U+FEFF``: the distinct characters, sorted, as their code points."""
    return ", ".join(sorted({f"U+{ord(ch):04X}" for ch in characters}))


async def refuse(send: Send, status: int, detail: str) -> None:
    """Answer ``{"detail": ...}`` with ``status`` and close the connection (the body, if
    any, is left unread)."""
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    body: dict[str, Any] = {"detail": detail}
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def _origin_authority(origin: str) -> str | None:
    """``host:port`` of an ``Origin`` header, the port made explicit; ``None`` if opaque."""
    parts = urlsplit(origin)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}"


def _host_authority(host: str, scheme: str) -> str:
    host = host.strip().lower()
    if host.endswith("]") or ":" not in host:  # no port: the scheme's own
        return f"{host}:{DEFAULT_PORTS.get(scheme, 80)}"
    return host


class SameOriginWrites:
    """Answers 403 to a write (any method but GET, HEAD, OPTIONS) sent by another site's
    page, before its body is read.

    Browsers name the page that makes a request: ``Sec-Fetch-Site`` says whether it is this
    origin (``same-origin``) or the user (``none``, typed or bookmarked), and ``Origin`` gives
    the page's origin, which must then be this server's own (the ``Host`` it was sent to).
    A form on any site may POST here without reading the answer (no CORS needed), so the
    check is what stops it; clients that are not browsers send neither header and pass.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            headers = Headers(scope=scope)
            fetch_site = headers.get("sec-fetch-site")
            origin = headers.get("origin")
            foreign = fetch_site is not None and fetch_site not in ("same-origin", "none")
            if origin is not None and not foreign:
                host = _host_authority(headers.get("host", ""), scope.get("scheme", "http"))
                foreign = _origin_authority(origin.lower()) != host
            if foreign:
                await refuse(send, 403, "a write from another site's page is refused")
                return
        await self.app(scope, receive, send)


class KeyCheck:
    """Answers 401 to a request for a guarded path without the right ``X-API-Key``, before
    its body is read (the routes check the key too; this keeps refused bodies unread).

    Args:
        api_key: The key; ``None`` lets every request through.
        guarded: Whether a path needs the key.
    """

    def __init__(self, app: ASGIApp, api_key: str | None, guarded: Callable[[str], bool]) -> None:
        self.app = app
        self.api_key = api_key
        self.guarded = guarded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.api_key
            and scope["type"] == "http"
            and self.guarded(scope["path"])
            and not key_matches(Headers(scope=scope).get("x-api-key"), self.api_key)
        ):
            await refuse(send, 401, "a valid X-API-Key header is required")
            return
        await self.app(scope, receive, send)


def key_matches(sent: str | None, api_key: str) -> bool:
    """Whether ``sent`` is ``api_key``, in time that does not depend on where they differ."""
    return secrets.compare_digest((sent or "").encode(), api_key.encode())


class BodyLimit:
    """Answers 413 to a request whose body is over ``max_bytes``.

    A declared ``Content-Length`` over the limit is refused before anything is read. A body
    without one (chunked) is counted as the application reads it, never buffered here:
    once it passes the limit, the application is told the client left, whatever it had
    begun to answer is dropped, and the client gets the 413 instead.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        received = 0
        over = started = False

        async def counted() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if not over:
                started = started or message["type"] == "http.response.start"
                await send(message)

        try:
            await self.app(scope, counted, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:  # an answer already begun can only be cut short
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        await refuse(send, 413, f"the request body is over the {self.max_bytes:,}-byte limit")
