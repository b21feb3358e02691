"""What a running service is allowed to do: where it keeps data, who may call it, how much.

The checks live here, not in the CLI, so ``create_app`` refuses an unsafe configuration
however it is started (``longscan serve``, a test, an ASGI server of the user's choosing).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from longscan.answering.llm import LLMConfig

LOOPBACK_NAMES = ("localhost",)
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # as a Host header names them
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
MIB = 1 << 20


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``127.0.0.0/8``, ``::1``)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name may resolve to anything: treat it as public


def host_header_name(host: str) -> str:
    """``host`` as the host part of an HTTP ``Host`` header: lower case, IPv6 in brackets."""
    host = host.strip().lower()
    try:
        if ipaddress.ip_address(host.strip("[]")).version == 6:
            return f"[{host.strip('[]')}]"
    except ValueError:
        pass
    return host


@dataclass(frozen=True)
class ServiceSettings:
    """Limits and locations of one service.

    Attributes:
        data_dir: Uploaded files (``uploads/``), the memory bank (``bank/``) and the scanner's
            sentence vectors (``vectors/``) all live under it.
        host: The address the server binds; anything but loopback needs ``api_key``.
        api_key: Required in the ``X-API-Key`` header of every ``/api`` call except health.
        max_upload_bytes: Largest request body; larger ones get 413 before they are read.
        scan_timeout_s: How long a question may wait and run before it gets 504.
        max_queued: Questions waiting for the scanner beyond which new ones get 503.
        top_k: Evidence units at most when the request does not say; None keeps only the
            pipeline's word budget (``longscan ask``'s default).
        llm: An OpenAI-compatible server that answers, citing the evidence, when set.
        answerer: Who answers from the evidence (``answering.answerers``): ``auto`` takes
            ``llm`` when set, else the local instruct model when installed, else the
            extractive reader; ``none`` returns evidence only.
        allowed_hosts: Host names accepted in the ``Host`` header besides the bound one
            (``trusted_hosts``); ``"*"`` accepts any, which gives up the defence against
            DNS rebinding.
        cache_bytes: Memory the in-memory caches may each hold (segmented documents,
            sentence vectors); least recently used entries are dropped beyond it.
        max_reading: Uploads being read (beside the worker) or waiting to be, beyond which
            new ones get 503.
        header_timeout_s: How long a connection may take to send a request's head (and an
            idle one to begin the next) before it is closed.
        body_timeout_s: How long a request body may stall (no byte arriving while the
            service reads) before the connection is closed.
        max_connections: Open connections at most; beyond it a new one closes the one that
            has waited longest for a request head, or is refused when none waits. Keep it
            below the process's open-file limit.
    """

    data_dir: Path
    host: str = "127.0.0.1"
    api_key: str | None = None
    max_upload_bytes: int = 32 * MIB
    scan_timeout_s: float = 300.0
    max_queued: int = 256
    top_k: int | None = None
    llm: LLMConfig | None = None
    answerer: str = "auto"
    allowed_hosts: tuple[str, ...] = ()
    cache_bytes: int = 256 * MIB
    max_reading: int = 16
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 512

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.api_key:
            raise ValueError(
                f"binding {self.host} exposes the service beyond this machine; "
                "set an API key (--api-key or LONGSCAN_API_KEY) or bind 127.0.0.1"
            )
        if self.max_upload_bytes < 1:
            raise ValueError("max_upload_bytes must be positive")
        if self.scan_timeout_s <= 0:
            raise ValueError("scan_timeout_s must be positive")
        if self.max_queued < 1:
            raise ValueError("max_queued must be at least 1")
        if self.cache_bytes < 0:
            raise ValueError("cache_bytes must not be negative")
        if self.max_reading < 1 or self.max_connections < 1:
            raise ValueError("max_reading and max_connections must be at least 1")
        if self.header_timeout_s <= 0 or self.body_timeout_s <= 0:
            raise ValueError("header_timeout_s and body_timeout_s must be positive")
        for name in self.allowed_hosts:
            if name != "*" and ("*" in name or "/" in name or not name.strip()):
                raise ValueError(f"{name!r}: an allowed host is a host name or address")

    def trusted_hosts(self) -> list[str]:
        """The names a request's ``Host`` header may carry (its port aside).

        A page on another site that gets its own name resolved to this machine (DNS
        rebinding) sends that name, so only the names this service is reached by pass: the
        bound host; every loopback name when bound to loopback; when bound to every
        interface (``0.0.0.0``, ``::``), the loopback names and this machine's host name.
        ``allowed_hosts`` adds more (the name clients use for a public bind).
        """
        if "*" in self.allowed_hosts:
            return ["*"]
        names = [host_header_name(self.host)]
        if is_loopback(self.host) or self.host.strip() in WILDCARD_HOSTS:
            names += LOOPBACK_HOSTS
        if self.host.strip() in WILDCARD_HOSTS:
            names += [socket.gethostname().lower(), socket.getfqdn().lower()]
        names += [host_header_name(name) for name in self.allowed_hosts]
        return sorted({name for name in names if name and name not in WILDCARD_HOSTS})
