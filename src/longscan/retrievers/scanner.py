"""The scanner behind the common retriever interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.retrievers.base import Progress, Retriever, Units
from longscan.scanning.scanner import Scanner


class ScannerRetriever(Retriever):
    """Ranks sentences by the scanner's logits; documents are read in the order given.

    Args:
        scanner: A loaded scanner; default: the checkpoint shipped in the package.
        progress: Show a progress bar while encoding a new document.
    """

    name: ClassVar[str] = "scanner"
    unit = "sentence"

    def __init__(self, scanner: Scanner | None = None, progress: bool = False) -> None:
        self.scanner = scanner or Scanner.from_pretrained()
        self.progress = progress

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        return self.scanner.score(query, documents, progress=self.progress)

    def prepare(self, documents: Sequence[Document], on_progress: Progress | None = None) -> None:
        self.scanner.prepare(documents, on_progress)
