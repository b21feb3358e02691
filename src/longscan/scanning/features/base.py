"""The feature columns' layout and what every family of columns reads.

A family is a ``FeaturePart``: its name, the columns it fills, what it reads (for people)
and how it computes. ``FEATURE_NAMES`` is the layout of the columns, fixed: a checkpoint
trained on a prefix of them, or on named ones, reads exactly those (``feature_columns``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from longscan.documents import Document, SentencePositions
from longscan.lexical.bm25 import tokenize
from longscan.scanning.first_stage import FirstStage

if TYPE_CHECKING:
    from longscan.scanning.features.token_match import TokenStates

FEATURE_NAMES = (
    "bm25_over_max",  # BM25 score / the document's best score
    "bm25_rank",  # 1 - log(rank) / log(n): rank-based, robust to score scale
    "query_coverage",  # share of the query's content terms in the sentence
    "paragraph_start",  # 1 on a paragraph's first sentence
    "paragraph_position",  # index in the paragraph / paragraph length
    "log_words",  # log(1 + words) / 5
    "dense_rank",  # 1 - log(rank) / log(n) of the sentence vector's cosine with the query
    # Appended later; a checkpoint trained on a prefix of these names reads only that prefix.
    "paragraph_bm25",  # the best bm25_over_max in the sentence's paragraph
    "paragraph_dense_rank",  # rank of the paragraph's mean vector among all paragraphs
    "feedback_bm25",  # BM25 of the new terms of the best first-pass sentences / best score
    "feedback_dense_rank",  # rank of the cosine with the mean of those sentences' vectors
    "query_name_paragraph",  # the paragraph mentions a capitalised name of the query (rarity)
    "bridge_name",  # the sentence mentions a name the best first-pass sentences add (rarity)
    "bridge_name_paragraph",  # the best bridge_name in the sentence's paragraph
    "token_match",  # MaxSim of the query's tokens in the sentence's, first-pass candidates only
    "token_match_rank",  # rank of token_match among the candidates, 0 for other sentences
    "query_part_bm25",  # the best over the query's sentences of BM25 / that sentence's best
    "query_part_dense_rank",  # the best over the query's sentences of the dense rank under it
    "window_dense_rank",  # rank of the mean vector of the units within WINDOW_WORDS around it
)
N_FEATURES = len(FEATURE_NAMES)
FEATURE_COLUMNS = tuple(range(N_FEATURES))  # what the training data holds: every column
FEEDBACK_SENTENCES = 3  # the first-pass sentences whose words, vectors and names are fed back


class Columns:
    """The ``(n, N_FEATURES)`` float32 feature matrix, its columns reached by name."""

    def __init__(self, n: int) -> None:
        self.array = np.zeros((n, N_FEATURES), dtype=np.float32)

    @staticmethod
    def index(name: str) -> int:
        return FEATURE_NAMES.index(name)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.array[:, FEATURE_NAMES.index(name)]

    def __setitem__(self, name: str, values: np.ndarray | float) -> None:
        self.array[:, FEATURE_NAMES.index(name)] = values


@dataclass
class FeatureInputs:
    """What a query's columns are computed from: the first stage over the documents read
    as one sequence, their sentence vectors, the query's vector, and the encoder's token
    states (for the columns that read tokens)."""

    first: FirstStage
    documents: Sequence[Document]
    vectors: np.ndarray
    query_vector: np.ndarray
    tokens: TokenStates

    @cached_property
    def first_pass(self) -> np.ndarray:
        """Sentence positions, best first, by the first stage's BM25 + dense ranks."""
        return self.first.order()

    @cached_property
    def fed_back(self) -> np.ndarray:
        """The ``FEEDBACK_SENTENCES`` best of the first pass, in sequence order."""
        return np.sort(self.first_pass[:FEEDBACK_SENTENCES])

    @cached_property
    def fed_back_texts(self) -> list[str]:
        return SentencePositions(self.documents).texts(self.fed_back)

    @cached_property
    def asked(self) -> set[str]:
        """The query's BM25 terms."""
        return set(tokenize([self.first.query])[0])


@dataclass(frozen=True)
class FeaturePart:
    """One family of columns.

    Attributes:
        name: What the family is called.
        columns: The columns it fills, by name.
        reads: What it reads, in words (the first stage, the structure, other columns...).
        compute: Fills its columns of ``Columns`` from ``FeatureInputs``; it may read the
            columns of the parts before it.
        on_demand: Costly: computed only when a caller reads one of its columns (left 0
            otherwise).
    """

    name: str
    columns: tuple[str, ...]
    reads: str
    compute: Callable[[FeatureInputs, Columns], None]
    on_demand: bool = False
