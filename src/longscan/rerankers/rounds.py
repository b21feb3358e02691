"""A ranking's best sentences re-scored by the cross-encoder, in two rounds.

Round one reads (question, sentence in context) for the ranking's ``depth`` best sentences.
Round two joins the question with round one's best sentence and reads that against round
one's other candidates (or its ``reread`` best) plus the best sentences under BM25 for the
joined query: the second hop of a multi-hop question shares words with the first hop, not
with the question.

A sentence's final score is the higher of its two rounds, or with ``blend`` that score and
the ranking's own, each standardised over the candidates and added, the ranking's weighted by
``blend`` (a scanner has read the whole document; the cross-encoder has read one sentence and
its neighbours). Sentences outside both rounds keep the ranking's order below every
candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from longscan.documents import Document, SentencePositions
from longscan.rerankers.cross_encoder import (
    CrossEncoderReranker,
    get_reranker,
    join_hop,
)

DEFAULT_DEPTH = 20  # round one's candidates: FR@100 is decided by the best four or five
DEFAULT_HOP_DEPTH = 10  # round two's extra candidates, from BM25 over the joined query

Lexical = Callable[[str], np.ndarray]  # BM25 of every sentence for a free-text query


def standardised(scores: np.ndarray) -> np.ndarray:
    """Zero mean and unit spread over the candidates, so two scorers' scales add fairly."""
    spread = float(scores.std())
    return (scores - scores.mean()) / (spread if spread > 0 else 1.0)


@dataclass
class TwoRounds:
    """Re-scores the best sentences of a ranking of every sentence of ``documents``.

    Attributes:
        reranker: The cross-encoder.
        depth: Round one's candidates.
        hop_depth: Round two's extra BM25 candidates; 0 turns round two off.
        reread: How many of round one's best candidates round two reads again (``None``: all
            of them); fewer reads make a re-query cheaper.
        blend: Weight of the ranking's standardised score added to the cross-encoder's
            (0: the cross-encoder's score alone).
    """

    reranker: CrossEncoderReranker
    depth: int = DEFAULT_DEPTH
    hop_depth: int = DEFAULT_HOP_DEPTH
    blend: float = 0.0
    reread: int | None = None

    def __post_init__(self) -> None:
        if self.depth < 1 or self.hop_depth < 0 or self.blend < 0 or (self.reread or 0) < 0:
            raise ValueError("depth must be >= 1, hop_depth, blend and reread >= 0")

    def __call__(
        self, query: str, documents: Sequence[Document], ranking: np.ndarray, lexical: Lexical
    ) -> np.ndarray:
        """Scores ``(n,)`` for the sentences of ``documents`` read as one sequence, given
        the first ranking's scores ``(n,)`` and ``lexical`` for the second round's query."""
        ranking = np.asarray(ranking, dtype=np.float64)
        if not len(ranking):
            return ranking
        query = self.reranker.fit_query(query)
        positions = SentencePositions(documents)
        order = np.argsort(-ranking, kind="stable")
        candidates = order[: self.depth]
        scores = self.reranker.score(query, self._in_context(positions, candidates))
        final = dict(zip(candidates.tolist(), scores.tolist(), strict=True))
        if self.hop_depth and len(candidates) > 1:
            by_score = candidates[np.argsort(-scores, kind="stable")]
            best = int(by_score[0])
            joined = join_hop(query, positions.text(best))
            extra = np.argsort(-lexical(joined), kind="stable")[: self.hop_depth]
            again = by_score[1:] if self.reread is None else by_score[1 : 1 + self.reread]
            second = np.array(
                [i for i in dict.fromkeys([*again.tolist(), *extra.tolist()]) if i != best]
            )
            read = self.reranker.score(joined, self._in_context(positions, second))
            for i, score in zip(second.tolist(), read.tolist(), strict=True):
                final[i] = max(final.get(i, -np.inf), score)
        chosen = np.array(list(final))
        read = np.array(list(final.values()))
        if self.blend:
            read = standardised(read) + self.blend * standardised(ranking[chosen])
        result = np.empty(len(ranking), dtype=np.float64)
        # below every candidate, in the first ranking's order
        result[order] = read.min() - 1.0 - np.arange(len(order)) / len(order)
        result[chosen] = read
        return result

    def _in_context(self, positions: SentencePositions, chosen: np.ndarray) -> list[str]:
        """The cross-encoder's passages for the sentences at ``chosen``."""
        return [self.reranker.passage(*positions.locate(int(p))) for p in chosen.tolist()]


def shipped_rounds(adapter: str | None = None) -> TwoRounds:
    """What ``scanner-rerank`` re-scores with: the packaged adapter (or the one in
    ``adapter``), the scan's 20 best plus 10 second-round BM25 candidates, blended with the
    scan at weight 1 (docs/experiments.md: the only weight tried that led the scan alone on both
    HotpotQA and SQuAD)."""
    return TwoRounds(get_reranker(adapter), blend=1.0)
