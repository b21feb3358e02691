"""longscan: question answering over very long documents.

Documents → segmentation → encoding → scanning → selection → answering → evaluation.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from longscan.documents import Document, DocumentError, Evidence, read_file, read_paths

if TYPE_CHECKING:
    from longscan.pipeline import Pipeline, answer

__all__ = [
    "Document",
    "DocumentError",
    "Evidence",
    "Pipeline",
    "__version__",
    "answer",
    "read_file",
    "read_paths",
]


def __getattr__(name: str) -> Any:
    """``longscan.answer`` and ``longscan.Pipeline``, imported on first use: ``import
    longscan`` stays light for code that only reads documents."""
    if name in ("answer", "Pipeline"):
        from longscan import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'longscan' has no attribute {name!r}")
