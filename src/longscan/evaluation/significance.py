"""Paired significance of the difference between two retrievers on the same items.

A mean over 38 or 100 questions moves a few points by chance; whether one retriever beats
another is asked of the per-item pairs. The test is a paired randomization test (Fisher's,
as ranx and most IR papers use): the sign of each item's difference is flipped at random,
and the p-value is the share of flips whose mean difference is at least as far from 0 as
the one observed, two-sided, by ``scipy.stats.permutation_test``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from longscan.evaluation.evaluator import EvaluationResult

RESAMPLES = 10_000
ALPHA = 0.05


@dataclass(frozen=True)
class PairedTest:
    """``other`` against ``baseline`` on one measure, over the items both scored."""

    measure: str
    baseline: str
    other: str
    items: int
    baseline_mean: float
    other_mean: float
    p_value: float

    @property
    def difference(self) -> float:
        return self.other_mean - self.baseline_mean

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


def paired_test(
    baseline: EvaluationResult, other: EvaluationResult, measure: str, seed: int = 0
) -> PairedTest | None:
    """The paired randomization test of ``measure``; None when no item has both scores."""
    from scipy.stats import permutation_test

    base = {record.item_id: record.scores.get(measure) for record in baseline.records}
    pairs = [
        (base[record.item_id], record.scores[measure])
        for record in other.records
        if measure in record.scores and base.get(record.item_id) is not None
    ]
    if not pairs:
        return None
    a, b = (np.array(column, dtype=np.float64) for column in zip(*pairs, strict=True))
    if np.array_equal(a, b):
        p_value = 1.0
    else:
        result = permutation_test(
            (a, b),
            _mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=RESAMPLES,
            alternative="two-sided",
            random_state=seed,
        )
        p_value = float(result.pvalue)
    return PairedTest(measure, baseline.retriever, other.retriever, len(pairs),
                      float(a.mean()), float(b.mean()), p_value)  # fmt: skip


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y - x, axis=axis)


def against_first(results: Sequence[EvaluationResult], measures: Sequence[str]) -> list[PairedTest]:
    """Every result after the first against the first, on each measure both scored."""
    tests = []
    for other in results[1:]:
        for measure in measures:
            test = paired_test(results[0], other, measure)
            if test is not None:
                tests.append(test)
    return tests
