"""A first stage's best sentences re-scored by the cross-encoder, in two rounds.

Round one reads (question, sentence in context) for the first stage's ``depth`` best
sentences. Round two joins the question with round one's best sentence and reads that
against round one's other candidates plus BM25's best sentences for the joined query: the
second hop of a multi-hop question shares words with the first hop, not with the question.
A sentence's final score is the higher of its two rounds; sentences outside both rounds
keep the first stage's order below every candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.rerankers.cross_encoder import (
    CrossEncoderReranker,
    get_reranker,
    join_hop,
    sentence_in_context,
)
from longscan.retrievers.base import Retriever, Units
from longscan.retrievers.bm25 import BM25Retriever

DEFAULT_DEPTH = 20  # round one's candidates: FR@100 is decided by the best four or five
DEFAULT_HOP_DEPTH = 10  # round two's extra candidates, from BM25 over the joined query


class RerankRetriever(Retriever):
    """Re-scores ``first_stage``'s best sentences with a cross-encoder.

    Args:
        first_stage: Ranks every sentence (the hybrid baseline, or the scanner).
        reranker: Default: the adapter shipped in the package.
        depth: Round one's candidates.
        hop_depth: Round two's extra BM25 candidates; 0 turns round two off.
    """

    name: ClassVar[str] = "rerank"
    unit = "sentence"

    def __init__(
        self,
        first_stage: Retriever,
        reranker: CrossEncoderReranker | None = None,
        depth: int = DEFAULT_DEPTH,
        hop_depth: int = DEFAULT_HOP_DEPTH,
    ) -> None:
        if first_stage.unit != "sentence":
            raise ValueError("the cross-encoder re-scores sentences; use a sentence first stage")
        if depth < 1 or hop_depth < 0:
            raise ValueError("depth must be >= 1 and hop_depth >= 0")
        self.first_stage = first_stage
        self.reranker = reranker or get_reranker()
        self.depth, self.hop_depth = depth, hop_depth
        self.hop_index = BM25Retriever("sentence")

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        first = np.asarray(self.first_stage.score_units(query, documents, units), np.float64)
        order = np.argsort(-first, kind="stable")
        candidates = order[: self.depth]
        scores = self._read(query, documents, units, candidates)
        final = dict(zip(candidates.tolist(), scores.tolist(), strict=True))
        if self.hop_depth and len(candidates) > 1:
            best = int(candidates[int(np.argmax(scores))])
            joined = join_hop(query, units.texts[best])
            lexical = self.hop_index.score_units(joined, documents, units)
            extra = np.argsort(-lexical, kind="stable")[: self.hop_depth]
            second = np.array(
                [i for i in dict.fromkeys([*candidates.tolist(), *extra.tolist()]) if i != best]
            )
            for i, score in zip(
                second.tolist(), self._read(joined, documents, units, second).tolist(), strict=True
            ):
                final[i] = max(final.get(i, -np.inf), score)
        result = np.empty(len(units), dtype=np.float64)
        floor = min(final.values()) - 1.0
        # below every candidate, in the first stage's order
        result[order] = floor - np.arange(len(order)) / max(len(order), 1)
        result[list(final)] = list(final.values())
        return result

    def _read(
        self, query: str, documents: Sequence[Document], units: Units, indices: np.ndarray
    ) -> np.ndarray:
        passages = [
            sentence_in_context(documents[int(units.doc_index[i])], int(units.local_index[i]))
            for i in indices.tolist()
        ]
        return self.reranker.score(query, passages).astype(np.float64)
