"""Hybrid BM25 + dense retrieval: the mainstream RAG baseline the scanner must beat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np

from longscan.documents import Document
from longscan.retrievers.base import Retriever, UnitKind, Units
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.dense import DenseRetriever

FusionMethod = Literal["rrf", "score"]


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every unit under ``scores`` ``(n,)``; ties keep document order."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def reciprocal_rank_fusion(score_lists: Sequence[np.ndarray], k: float = 60.0) -> np.ndarray:
    """RRF: ``score(u) = Σ_r 1 / (k + rank_r(u))`` over the fused rankings (Cormack et al.)."""
    if k < 0:
        raise ValueError("the RRF constant k must be non-negative")
    return sum(1.0 / (k + ranks_of(scores)) for scores in score_lists)


def min_max(scores: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1]; a constant ranking carries no information and maps to 0."""
    low, high = float(scores.min()), float(scores.max())
    return np.zeros_like(scores) if high == low else (scores - low) / (high - low)


def score_fusion(score_lists: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Weighted sum of min-max normalised scores."""
    if len(weights) != len(score_lists):
        raise ValueError("one weight per fused ranking is needed")
    return sum(w * min_max(scores) for w, scores in zip(weights, score_lists, strict=True))


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
        rrf_k: float = 60.0,
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
