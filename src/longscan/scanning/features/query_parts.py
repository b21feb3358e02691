"""The query read sentence by sentence.

A prompt often asks its question after an instruction ("Review the statements above ... What
is the Basic EPS of X?"). Scored as one text, the longer instruction outweighs the question
in BM25 and in the pooled vector, and the evidence of the question ranks below boilerplate
that matches the instruction. Scored part by part, a sentence is as high as the query part
it answers best. A one-sentence query's columns equal ``bm25_over_max`` and ``dense_rank``.
"""

from __future__ import annotations

import numpy as np

from longscan.scanning.features.base import Columns, FeatureInputs, FeaturePart
from longscan.scanning.first_stage import rank_feature
from longscan.segment import segment

MAX_QUERY_PARTS = 16  # a query of more sentences is read in this many runs of them


def query_part_columns(inputs: FeatureInputs, columns: Columns) -> None:
    """``query_part_bm25`` and ``query_part_dense_rank``."""
    first = inputs.first
    parts = query_parts(first.query)
    if len(parts) < 2:
        columns["query_part_bm25"] = columns["bm25_over_max"]
        columns["query_part_dense_rank"] = first.dense_rank
        return
    encoder = inputs.tokens.encoder
    if encoder is None:
        raise ValueError("the query_part features need the sentence encoder")
    bm25, dense = columns["query_part_bm25"], columns["query_part_dense_rank"]  # views
    for part, vector in zip(parts, encoder.encode(parts), strict=True):
        scores = first.index.lexical(part)
        if scores.max() > 0:
            np.maximum(bm25, scores / scores.max(), out=bm25)
        np.maximum(dense, rank_feature(inputs.vectors @ vector), out=dense)


def query_parts(query: str) -> list[str]:
    """The query's sentences, or ``MAX_QUERY_PARTS`` runs of consecutive sentences when it
    has more (a pasted page stays a few encoder calls and still covers the whole query)."""
    spans = segment(query)[0]
    if len(spans) > MAX_QUERY_PARTS:
        runs = np.array_split(np.arange(len(spans)), MAX_QUERY_PARTS)
        spans = np.array([[spans[run[0], 0], spans[run[-1], 1]] for run in runs])
    return [query[start:end] for start, end in spans.tolist()]


QUERY_PARTS = FeaturePart(
    "query_parts",
    ("query_part_bm25", "query_part_dense_rank"),
    "the query's sentences, encoded, against BM25 and the sentence vectors",
    query_part_columns,
    on_demand=True,
)
