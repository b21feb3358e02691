"""longscan: question answering over very long documents.

Documents → segmentation → encoding → scanning → selection → answering → evaluation.
"""

from __future__ import annotations

__version__ = "0.1.0"

from longscan.documents import Document, DocumentError, Evidence, read_file, read_paths

__all__ = ["Document", "DocumentError", "Evidence", "__version__", "read_file", "read_paths"]
