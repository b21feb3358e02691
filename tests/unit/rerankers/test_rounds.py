"""The two re-scoring rounds: which sentences are read against which query, and the order
of what is not read. A word-overlap scorer stands in for the cross-encoder so each
expectation can be worked out by hand; the shipped model is tested in test_cross_encoder."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from longscan.documents import Document
from longscan.rerankers.cross_encoder import sentence_in_context
from longscan.rerankers.rounds import TwoRounds, standardised
from longscan.scanning.first_stage import SentenceIndex

STOP = {"the", "a", "of", "in", "is", "was", "who", "what", "which", "did", "by", "and", "as"}


class OverlapScorer:
    """Counts the query's content words in the passage's sentence (its text before the
    context separator) and records every (query, sentence) it read."""

    def __init__(self) -> None:
        self.read: list[tuple[str, str]] = []

    @staticmethod
    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP}

    @staticmethod
    def passage(document: Document, index: int) -> str:
        return sentence_in_context(document, index)

    @staticmethod
    def fit_query(query: str) -> str:
        return query

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        sentences = [p.split(" [SEP] ")[0] for p in passages]
        self.read += [(query, s) for s in sentences]
        return np.array([len(self.words(query) & self.words(s)) for s in sentences], float)


FILLER = [f"Report {i} covers rainfall totals for district {i}." for i in range(12)]
TEXT = "\n\n".join(
    [
        "Kiss and Tell is a 1945 film starring Shirley Temple as Corliss Archer.",
        *FILLER[:6],
        "Shirley Temple later served as United States ambassador to Ghana.",
        *FILLER[6:],
    ]
)
QUESTION = "Which country hosted the ambassador post of the star of Kiss and Tell?"


def rounds_over(ranking: np.ndarray, **options: object) -> tuple[np.ndarray, OverlapScorer]:
    document = Document("d", TEXT)
    scorer = OverlapScorer()
    rounds = TwoRounds(scorer, **options)  # type: ignore[arg-type]
    index = SentenceIndex([document])
    return rounds(QUESTION, [document], ranking, index.lexical), scorer


def test_the_second_round_finds_the_hop_that_shares_words_only_with_the_first() -> None:
    n = 14
    ranking = np.zeros(n)
    ranking[0] = 1.0  # the first stage found the first hop only
    one_round, _ = rounds_over(ranking, depth=3, hop_depth=0)
    two_rounds, scorer = rounds_over(ranking, depth=3, hop_depth=2)
    hop = 7  # "Shirley Temple later served ..." is not among the first stage's three best
    assert np.argsort(-one_round)[:3].tolist() == [0, 1, 2]
    assert two_rounds[hop] > two_rounds[1:hop].max()
    joined = [q for q, s in scorer.read if s.startswith("Shirley Temple later")]
    assert joined and all(q.startswith(QUESTION + " [SEP] Kiss and Tell") for q in joined)


def test_round_two_can_reread_only_round_ones_best_candidates() -> None:
    ranking = np.linspace(1.0, 0.0, 14)  # round one reads sentences 0-5; 0 scores best

    def second_round(scorer: OverlapScorer) -> set[str]:
        return {sentence for query, sentence in scorer.read if query != QUESTION}

    _, everything = rounds_over(ranking, depth=6, hop_depth=2)
    _, fewer = rounds_over(ranking, depth=6, hop_depth=2, reread=2)
    hop = "Shirley Temple later served as United States ambassador to Ghana."
    assert second_round(everything) == {*FILLER[:5], hop}
    assert second_round(fewer) == {*FILLER[:2], hop}  # the next two of round one, and BM25's


def test_sentences_left_unread_keep_the_first_order_below_every_candidate() -> None:
    ranking = np.linspace(1.0, 0.0, 14)
    scores, scorer = rounds_over(ranking, depth=4, hop_depth=0)
    assert len(scorer.read) == 4
    read = scores[:4]
    unread = scores[4:]
    assert unread.max() < read.min()
    assert np.all(np.diff(unread) < 0)  # still in the ranking's order


def test_blend_adds_the_weighted_first_ranking_to_the_cross_encoder() -> None:
    ranking = np.linspace(1.0, 0.0, 14)
    plain, _ = rounds_over(ranking, depth=5, hop_depth=0)
    blended, _ = rounds_over(ranking, depth=5, hop_depth=0, blend=2.0)
    expected = standardised(plain[:5]) + 2.0 * standardised(ranking[:5])
    assert blended[:5] == pytest.approx(expected)


def test_bad_depths_and_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        TwoRounds(OverlapScorer(), depth=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="blend"):
        TwoRounds(OverlapScorer(), blend=-1.0)  # type: ignore[arg-type]
