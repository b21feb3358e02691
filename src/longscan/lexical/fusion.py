"""Fusing rankings: reciprocal-rank fusion and min-max score fusion, for any ranker."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
