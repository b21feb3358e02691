"""Chunking-free in-context retrieval behind the common retriever interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document, Evidence
from longscan.incontext.cfic import CFIC
from longscan.retrievers.base import Retriever, Units, validate_request


class CFICRetriever(Retriever):
    """Evidence spans quoted by a causal LM (``incontext.cfic``): a few multi-sentence spans
    per question, not a ranking of every sentence.

    Args:
        cfic: the reader; its KV caches make a second question over the same text cheap.
    """

    name: ClassVar[str] = "cfic"
    unit = "sentence"

    def __init__(self, cfic: CFIC) -> None:
        self.cfic = cfic

    def retrieve(
        self, query: str, documents: Sequence[Document], top_k: int | None = None
    ) -> list[Evidence]:
        query = validate_request(query, documents, top_k)
        spans = self.cfic.spans(query, documents)[:top_k]
        return [
            Evidence.of(
                documents[s.doc_index],
                s.start,
                s.end,
                s.score,
                _first_sentence(documents[s.doc_index], s.start),
            )
            for s in spans
        ]

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        """Each sentence's best span score; sentences in no span rank below all of them."""
        scores = np.full(len(units), -np.inf)
        for span in self.cfic.spans(query, documents):
            inside = (units.doc_index == span.doc_index) & (units.spans[:, 0] >= span.start)
            inside &= units.spans[:, 1] <= span.end
            scores[inside] = np.maximum(scores[inside], span.score)
        return scores


def _first_sentence(document: Document, start: int) -> int:
    """The index of the sentence a span starts with (Evidence's unit index)."""
    return int(np.searchsorted(document.sentences[:, 0], start, side="right")) - 1
