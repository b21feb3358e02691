"""Fusing rankings: reciprocal-rank fusion and min-max score fusion, for any ranker."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RRF_K = 60.0  # Cormack et al.'s constant: damps the weight of the very top ranks


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every unit under ``scores`` ``(n,)``; ties keep document order."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def _rrf_weight(rank: int | np.ndarray, k: float) -> float | np.ndarray:
    """``1 / (k + rank)``: what one ranking adds to an item's RRF score (Cormack et al.).

    The one formula behind both fusions below, so score arrays and id rankings fuse alike.
    """
    if k < 0:
        raise ValueError("the RRF constant k must be non-negative")
    return 1.0 / (k + rank)


def reciprocal_rank_fusion(score_lists: Sequence[np.ndarray], k: float = RRF_K) -> np.ndarray:
    """RRF of scores of the same units: ``score(u) = Σ_r 1 / (k + rank_r(u))``."""
    return sum(_rrf_weight(ranks_of(scores), k) for scores in score_lists)


def fuse_rankings(rankings: Sequence[Sequence[int]], k: float = RRF_K) -> list[tuple[int, float]]:
    """RRF of id rankings that may hold different ids (an id a ranking lacks gets nothing
    from it): ``(id, score)``, best first, ties in the order the ids are first seen."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + float(_rrf_weight(rank, k))
    return sorted(scores.items(), key=lambda pair: -pair[1])


def min_max(scores: np.ndarray) -> np.ndarray:
    """Rescale to [0, 1]; a constant ranking carries no information and maps to 0."""
    low, high = float(scores.min()), float(scores.max())
    return np.zeros_like(scores) if high == low else (scores - low) / (high - low)


def score_fusion(score_lists: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Weighted sum of min-max normalised scores."""
    if len(weights) != len(score_lists):
        raise ValueError("one weight per fused ranking is needed")
    return sum(w * min_max(scores) for w, scores in zip(weights, score_lists, strict=True))
