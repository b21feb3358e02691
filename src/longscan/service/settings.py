"""What a running service is allowed to do: where it keeps data, who may call it, how much.

The checks live here, not in the CLI, so ``create_app`` refuses an unsafe configuration
however it is started (``longscan serve``, a test, an ASGI server of the user's choosing).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from longscan.answering.llm import LLMConfig

LOOPBACK_NAMES = ("localhost",)
MIB = 1 << 20


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``127.0.0.0/8``, ``::1``)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name may resolve to anything: treat it as public


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
        top_k: Evidence sentences returned when the request does not say.
        llm: Answers with citations when set.
    """

    data_dir: Path
    host: str = "127.0.0.1"
    api_key: str | None = None
    max_upload_bytes: int = 32 * MIB
    scan_timeout_s: float = 300.0
    max_queued: int = 256
    top_k: int = 10
    llm: LLMConfig | None = None

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
