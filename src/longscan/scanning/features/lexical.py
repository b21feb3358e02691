"""The first stage's own columns and the document's structure: what BM25 and the dense
ranking say of each sentence, how much of the query it holds, and where it sits in its
paragraph."""

from __future__ import annotations

from typing import Any

import numpy as np

from longscan.lexical.bm25 import tokenize
from longscan.scanning.features.base import Columns, FeatureInputs, FeaturePart


class TermPresence:
    """Which sentences hold a term (BM25 idf is positive, so a score > 0 means present),
    looked up once per term and query."""

    def __init__(self, bm25: Any) -> None:
        self.bm25 = bm25
        self._seen: dict[str, np.ndarray] = {}

    def of(self, term: str) -> np.ndarray:
        if term not in self._seen:
            self._seen[term] = np.asarray(self.bm25.get_scores([term])) > 0
        return self._seen[term]


def structure(inputs: FeatureInputs, columns: Columns) -> None:
    for column, name in enumerate(STRUCTURE.columns):
        columns[name] = inputs.first.index.structure[:, column]


def lexical(inputs: FeatureInputs, columns: Columns) -> None:
    first = inputs.first
    columns["bm25_rank"] = first.bm25_rank
    best = first.bm25.max()
    if best > 0:
        columns["bm25_over_max"] = first.bm25 / best
    query_terms = list(dict.fromkeys(tokenize([first.query])[0]))
    presence = TermPresence(first.index.bm25)
    coverage = columns["query_coverage"]  # a view: summed in place
    for term in first.index.known_terms(first.query):
        coverage += presence.of(term)
    if query_terms:
        coverage /= len(query_terms)


def dense(inputs: FeatureInputs, columns: Columns) -> None:
    columns["dense_rank"] = inputs.first.dense_rank


STRUCTURE = FeaturePart(
    "structure",
    ("paragraph_start", "paragraph_position", "log_words"),
    "the segmentation (query-independent, kept with the document's index)",
    structure,
)
LEXICAL = FeaturePart(
    "lexical",
    ("bm25_over_max", "bm25_rank", "query_coverage"),
    "the first stage's BM25 scores and the query's terms",
    lexical,
)
DENSE = FeaturePart("dense", ("dense_rank",), "the first stage's dense ranking", dense)
