"""Attention-based passage ranking behind the common retriever interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.incontext.attention import AttentionRanker
from longscan.incontext.docids import passages_of
from longscan.retrievers.base import Retriever, Units


class AttentionRetriever(Retriever):
    """Ranks 300-word chunks, each shown to a causal LM as a ``[DOC i]`` block, by the
    question's cumulative attention to them (``incontext.attention``)."""

    name: ClassVar[str] = "icr-attention"
    unit = "chunk"

    def __init__(self, ranker: AttentionRanker) -> None:
        self.ranker = ranker

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        passages = passages_of(units.doc_index, units.spans)
        return self.ranker.scores(query, documents, passages)
