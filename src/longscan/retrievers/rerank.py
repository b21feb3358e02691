"""A first stage's best sentences re-scored by the cross-encoder in two rounds
(``rerankers.rounds``): the ``rerank`` baseline is the hybrid's 50 best."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.rerankers.cross_encoder import CrossEncoderReranker, get_reranker
from longscan.rerankers.rounds import DEFAULT_DEPTH, DEFAULT_HOP_DEPTH, TwoRounds
from longscan.retrievers.base import Retriever, Units
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.hybrid import HybridRetriever

BASELINE_DEPTH = 50  # the hybrid's candidates in the ``rerank`` baseline


class RerankRetriever(Retriever):
    """Re-scores ``first_stage``'s best sentences with a cross-encoder.

    Args:
        first_stage: Ranks every sentence (the hybrid baseline, for instance).
        reranker: Default: the adapter shipped in the package.
        depth: Round one's candidates.
        hop_depth: Round two's extra BM25 candidates; 0 turns round two off.
        blend: Weight of the first stage's standardised score added to the
            cross-encoder's (0: the cross-encoder's alone).
    """

    name: ClassVar[str] = "rerank"
    unit = "sentence"

    def __init__(
        self,
        first_stage: Retriever,
        reranker: CrossEncoderReranker | None = None,
        depth: int = DEFAULT_DEPTH,
        hop_depth: int = DEFAULT_HOP_DEPTH,
        blend: float = 0.0,
    ) -> None:
        if first_stage.unit != "sentence":
            raise ValueError("the cross-encoder re-scores sentences; use a sentence first stage")
        self.first_stage = first_stage
        self.rounds = TwoRounds(reranker or get_reranker(), depth, hop_depth, blend)
        # the hybrid's own BM25 index answers the second round's query: no second index
        self.lexical = (
            first_stage.bm25 if isinstance(first_stage, HybridRetriever) else BM25Retriever()
        )

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        first = self.first_stage.score_units(query, documents, units)
        return self.rounds(
            query,
            documents,
            first,
            lambda text: self.lexical.score_units(text, documents, units),
        )


def hybrid_rerank() -> RerankRetriever:
    """The ``rerank`` baseline: the hybrid's 50 best sentences re-scored in two rounds."""
    return RerankRetriever(HybridRetriever("sentence"), depth=BASELINE_DEPTH)
