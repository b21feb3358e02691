"""Columns that read a sentence with its neighbours: its paragraph's best BM25 and its
paragraph's rank, and the rank of the 300 words around it. A sentence that says little on
its own ("He was born there.") is evidence when its surroundings match the question, as
chunk retrievers know; these columns give the scanner that signal at every step."""

from __future__ import annotations

import numpy as np

from longscan.encoders.minilm import unit_rows
from longscan.scanning.features.base import FEATURE_NAMES, Columns, FeatureInputs, FeaturePart
from longscan.scanning.first_stage import rank_feature

# A unit's neighbourhood for window_dense_rank: the chunk baselines' 300 words, centred on it
WINDOW_WORDS = 300
WINDOW_BLOCK = 4096  # units summed at a time (bounds the float64 sums of a huge document)


def paragraph(inputs: FeatureInputs, columns: Columns) -> None:
    runs = paragraph_runs(columns.array)
    starts, sizes = runs
    columns["paragraph_bm25"] = paragraph_max(columns["bm25_over_max"], runs)
    means = unit_rows(np.add.reduceat(inputs.vectors, starts, axis=0))
    paragraph_rank = rank_feature(means @ inputs.query_vector)
    columns["paragraph_dense_rank"] = np.repeat(paragraph_rank, sizes)


def window(inputs: FeatureInputs, columns: Columns) -> None:
    index = inputs.first.index
    columns["window_dense_rank"] = window_dense_rank(
        inputs.vectors, inputs.query_vector, index.words, index.document_bounds
    )


def window_dense_rank(
    vectors: np.ndarray,
    query: np.ndarray,
    words: np.ndarray,
    document_bounds: np.ndarray,
    width: int = WINDOW_WORDS,
) -> np.ndarray:
    """Rank of the query's cosine with each unit's neighbourhood: the mean vector of the
    units that lie within ``width / 2`` words of it, in its own document.

    A filing states a figure in a terse row ("Basic and diluted ... $ (0.12)") whose
    meaning is in the rows and lines around it, and a line-per-row table gives every row a
    paragraph of its own, so ``paragraph_dense_rank`` reads the row alone. A chunk
    retriever reads the neighbourhood; this column gives the scanner the same signal for
    every unit, with no chunk boundary to fall on.

    Args:
        vectors: ``(n, d)`` unit vectors of the sequence.
        words: ``(n,)`` words of each unit.
        document_bounds: ``(documents + 1,)`` each document's first unit, then ``n``.
    """
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    ends = np.cumsum(words)
    starts = ends - words
    first = np.searchsorted(ends, starts - width / 2, side="right")
    stop = np.searchsorted(starts, ends + width / 2, side="left")
    document = np.searchsorted(document_bounds, np.arange(len(vectors)), side="right") - 1
    first = np.maximum(first, document_bounds[document])
    stop = np.minimum(stop, document_bounds[document + 1])
    cosines = np.empty(len(vectors))
    # float64 sums of a block at a time, each document's blocks from its own first unit: a
    # document's windows are then summed the same way whatever documents come before it
    # (windows of the same units, common among short table rows, stay exact ties)
    for opening, closing in zip(document_bounds[:-1], document_bounds[1:], strict=True):
        for begin in range(opening, closing, WINDOW_BLOCK):
            end = min(begin + WINDOW_BLOCK, closing)
            low, high = first[begin:end].min(), stop[begin:end].max()
            sums = np.zeros((high - low + 1, vectors.shape[1]))
            np.cumsum(vectors[low:high], axis=0, out=sums[1:])
            windows = sums[stop[begin:end] - low] - sums[first[begin:end] - low]
            norms = np.maximum(np.linalg.norm(windows, axis=1), 1e-12)
            cosines[begin:end] = windows @ query / norms
    return rank_feature(cosines)


ParagraphRuns = tuple[np.ndarray, np.ndarray]  # first sentence of each paragraph, its size


def paragraph_runs(features: np.ndarray) -> ParagraphRuns:
    """The paragraphs of a non-empty sequence, from its ``paragraph_start`` column."""
    starts = np.flatnonzero(features[:, FEATURE_NAMES.index("paragraph_start")])
    if not len(starts) or starts[0] != 0:  # every document's first sentence starts a paragraph
        starts = np.r_[0, starts]
    return starts, np.diff(np.r_[starts, len(features)])


def paragraph_max(values: np.ndarray, runs: ParagraphRuns) -> np.ndarray:
    """Every sentence gets the largest value of its paragraph."""
    starts, sizes = runs
    return np.repeat(np.maximum.reduceat(values, starts), sizes)


PARAGRAPH = FeaturePart(
    "paragraph",
    ("paragraph_bm25", "paragraph_dense_rank"),
    "the structure, bm25_over_max, the sentence vectors and the query's",
    paragraph,
)
WINDOW = FeaturePart(
    "window",
    ("window_dense_rank",),
    "the sentence vectors, their words and the query's vector",
    window,
)
