"""Hybrid BM25 + dense retrieval: the mainstream RAG baseline the scanner must beat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np

from longscan.documents import Document
from longscan.lexical.fusion import RRF_K, reciprocal_rank_fusion, score_fusion
from longscan.retrievers.base import Retriever, UnitKind, Units
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.dense import DenseRetriever

FusionMethod = Literal["rrf", "score"]


class HybridRetriever(Retriever):
    """Fuses BM25 and dense rankings of the same units.

    The two component retrievers keep their own caches, so the hybrid never re-encodes or
    re-indexes a document that either of them has seen.

    Args:
        unit: ``"sentence"`` or ``"chunk"``.
        method: ``"rrf"`` (default, k = ``rrf_k``) or ``"score"`` (min-max, weighted by
            ``dense_weight``).
        bm25, dense: Component retrievers to share (and so share caches) with.
    """

    name: ClassVar[str] = "hybrid"

    def __init__(
        self,
        unit: UnitKind = "sentence",
        method: FusionMethod = "rrf",
        rrf_k: float = RRF_K,
        dense_weight: float = 0.5,
        bm25: BM25Retriever | None = None,
        dense: DenseRetriever | None = None,
    ) -> None:
        if method not in ("rrf", "score"):
            raise ValueError(f"unknown fusion {method!r}; use 'rrf' or 'score'")
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        self.unit = unit
        self.method = method
        self.rrf_k = rrf_k
        self.dense_weight = dense_weight
        self.bm25 = bm25 or BM25Retriever(unit)
        self.dense = dense or DenseRetriever(unit)
        if self.bm25.unit != unit or self.dense.unit != unit:
            raise ValueError("the fused retrievers must rank the same units")

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        lexical = self.bm25.score_units(query, documents, units)
        semantic = self.dense.score_units(query, documents, units)
        if self.method == "rrf":
            return reciprocal_rank_fusion([lexical, semantic], self.rrf_k)
        return score_fusion([lexical, semantic], [1 - self.dense_weight, self.dense_weight])
