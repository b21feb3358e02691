"""longscan: question answering over very long documents.

Documents → segmentation → encoding → scanning → selection → answering → evaluation.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from longscan.documents import Document, DocumentError, Evidence

if TYPE_CHECKING:
    from longscan.pipeline import Pipeline, answer
    from longscan.readers.files import read_file, read_paths

_LAZY = {  # name → the module that defines it, imported on first use
    "answer": "longscan.pipeline",
    "Pipeline": "longscan.pipeline",
    "read_file": "longscan.readers.files",
    "read_paths": "longscan.readers.files",
}

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
    """The names of ``_LAZY``, imported on first use: importing any longscan module imports
    this package first, which must stay as light as the core types."""
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'longscan' has no attribute {name!r}")
