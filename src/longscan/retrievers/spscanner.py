"""The paper's token-level scanner behind the common retriever interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.retrievers.base import Retriever, Units
from longscan.scanning.spscanner import SPScanner


class SPScannerRetriever(Retriever):
    """Ranks sentences by a token-level scanner's logits at their last tokens.

    Args:
        scanner: a loaded token-level scanner (``SPScanner.from_pretrained(DIR)``).
        progress: show a progress bar while scanning.
    """

    name: ClassVar[str] = "spscanner"
    unit = "sentence"

    def __init__(self, scanner: SPScanner, progress: bool = False) -> None:
        self.scanner = scanner
        self.progress = progress

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        return self.scanner.score(query, documents, progress=self.progress)
