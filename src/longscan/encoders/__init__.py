"""Local text encoders and their on-disk caches.

Names are imported on first use (PEP 562), so a module that needs only the cache helpers
(a PDF reader, the CLI) does not load PyTorch with the encoders.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_HOMES = {
    "EmbeddingCache": "longscan.encoders.cache",
    "default_cache_dir": "longscan.encoders.cache",
    "DEFAULT_ENCODER": "longscan.encoders.minilm",
    "SentenceEncoder": "longscan.encoders.minilm",
    "get_encoder": "longscan.encoders.minilm",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
