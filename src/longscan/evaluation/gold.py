"""Gold evidence mapped onto units, and answer-string matching.

Every metric and every training label asks the same question: does this unit (a sentence, a
chunk, a budget-cut piece of either) share at least one character with a gold span of the same
document? Two half-open spans ``[a, b)`` and ``[c, d)`` overlap iff ``a < d and c < b``. The
question is answered here once, so evaluation and training can never disagree about what
"gold" means.

Benchmarks without gold spans (L-Eval, Loong) only give reference answers; for them a unit is
judged by whether it contains a normalised answer string.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np

from longscan.documents import Document
from longscan.items import QAItem
from longscan.retrievers.base import CHUNK_WORDS

_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = string.punctuation + "\u2018\u2019\u201c\u201d\u00ab\u00bb\u2013\u2014\u2026"


class SpanLike(Protocol):
    """Anything that points into a document: ``Evidence``, ``GoldSpan``, ..."""

    @property
    def doc_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def spans_overlap(spans: np.ndarray, start: int, end: int) -> np.ndarray:
    """Which rows of ``spans`` ``(n, 2)`` share a character with ``[start, end)``.

    Half-open spans overlap iff ``span_start < end and start < span_end``; touching spans
    (``span_end == start``) share no character and do not overlap.
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    return (spans[:, 0] < end) & (start < spans[:, 1])


def overlap_labels(spans: np.ndarray, gold: Iterable[tuple[int, int]]) -> np.ndarray:
    """Boolean label per row of ``spans`` ``(n, 2)``: does it overlap any of the ``gold`` spans.

    ``label[i] = OR_g [spans[i, 0] < g_end and g_start < spans[i, 1]]``. This is the training
    label of a sentence as well as the gold-unit test of evaluation.
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    labels = np.zeros(len(spans), dtype=bool)
    for start, end in gold:
        labels |= spans_overlap(spans, start, end)
    return labels


def gold_spans_by_document(item: QAItem) -> dict[str, list[tuple[int, int]]]:
    """The item's gold spans grouped by document id, in the item's order."""
    grouped: dict[str, list[tuple[int, int]]] = {}
    for span in item.gold_spans:
        grouped.setdefault(span.doc_id, []).append((span.start, span.end))
    return grouped


def gold_unit_labels(
    item: QAItem, kind: Literal["sentence", "chunk"] = "sentence", chunk_words: int = CHUNK_WORDS
) -> dict[str, np.ndarray]:
    """Per-document boolean labels of the item's units: unit overlaps a gold span.

    The units are those a retriever of ``kind`` ranks (``Document.sentences`` or
    ``Document.chunks(chunk_words)``), so ``labels[doc_id][i]`` is the gold flag of unit ``i``
    of that document. Training uses the sentence labels as targets; evaluation uses the same
    labels to define the gold sentence set.
    """
    if kind not in ("sentence", "chunk"):
        raise ValueError(f"unknown unit kind {kind!r}; choose 'sentence' or 'chunk'")
    grouped = gold_spans_by_document(item)
    labels = {}
    for document in item.documents:
        spans = document.sentences if kind == "sentence" else document.chunks(chunk_words)
        labels[document.id] = overlap_labels(spans, grouped.get(document.id, ()))
    return labels


def gold_sentences(item: QAItem) -> list[tuple[str, int]]:
    """The gold sentence set: ``(doc_id, sentence_index)`` of every sentence overlapping gold.

    Ordered by document, then sentence; empty when the item has no gold spans.
    """
    if not item.gold_spans:
        return []
    return [
        (doc_id, int(index))
        for doc_id, labels in gold_unit_labels(item, "sentence").items()
        for index in np.flatnonzero(labels)
    ]


def gold_documents(item: QAItem) -> list[str]:
    """Documents holding evidence: ``gold_doc_ids``, else the documents of the gold spans."""
    if item.gold_doc_ids:
        return list(dict.fromkeys(item.gold_doc_ids))
    return list(dict.fromkeys(span.doc_id for span in item.gold_spans))


def covered_gold_spans(item: QAItem, units: Sequence[SpanLike]) -> np.ndarray:
    """Boolean per gold span of ``item``: overlapped by at least one of ``units``.

    A gold span counts as covered when any unit of the *same document* shares a character
    with it; the units may be ranked or not, whole or cut to a budget.
    """
    by_document: dict[str, list[tuple[int, int]]] = {}
    for unit in units:
        by_document.setdefault(unit.doc_id, []).append((unit.start, unit.end))
    arrays = {doc_id: np.asarray(spans, dtype=np.int64) for doc_id, spans in by_document.items()}
    return np.array(
        [
            span.doc_id in arrays
            and bool(spans_overlap(arrays[span.doc_id], span.start, span.end).any())
            for span in item.gold_spans
        ],
        dtype=bool,
    )


def sentences_of_units(
    units: Iterable[SpanLike], documents: Sequence[Document], limit: int | None = None
) -> list[tuple[str, int]]:
    """Map ranked units to the sentences they overlap, in rank order, first occurrence wins.

    A chunk ranked at position r contributes every sentence it overlaps, in document order,
    that no unit ranked before it has already contributed; a sentence unit contributes just
    itself (sentences of a document are disjoint). The result is the sentence ranking that a
    chunk retriever implies, so sentence-level measures compare sentence and chunk retrievers.

    Args:
        units: Ranked units, best first.
        documents: The documents the units point into.
        limit: Stop once this many sentences are collected (``None``: all).

    Raises:
        ValueError: a unit names a document not in ``documents``.
    """
    by_id = {document.id: document for document in documents}
    ranked: dict[tuple[str, int], None] = {}
    for unit in units:
        if limit is not None and len(ranked) >= limit:
            break
        document = by_id.get(unit.doc_id)
        if document is None:
            raise ValueError(f"evidence names unknown document {unit.doc_id!r}")
        sentences = document.sentences
        # Sentences are sorted and disjoint: those overlapping [start, end) are the ones
        # ending after ``start`` and starting before ``end``, a contiguous index range.
        first = int(np.searchsorted(sentences[:, 1], unit.start, side="right"))
        last = int(np.searchsorted(sentences[:, 0], unit.end, side="left"))
        for index in range(first, last):
            ranked.setdefault((unit.doc_id, index), None)
    found = list(ranked)
    return found if limit is None else found[:limit]


def normalize_text(text: str) -> str:
    """Lowercase and collapse every run of white space to one space (ends stripped).

    The one rule by which answers are found in text and training data is decontaminated
    (``longscan.training.decontamination.fingerprint``), so both see the same text as equal.
    """
    return _SPACES.sub(" ", text.lower()).strip()


def normalize_answer(answer: str) -> str:
    """``normalize_text`` plus punctuation stripped from both ends (``"Paris."`` -> ``paris``)."""
    return normalize_text(answer).strip(_EDGE_PUNCTUATION + " ")


@lru_cache(maxsize=8192)
def _answer_pattern(answer: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(answer)}(?!\w)")


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether any normalised answer occurs in the normalised ``text``, on word boundaries.

    Both sides are normalised (``normalize_answer`` / ``normalize_text``), empty answers are
    ignored, and a match must not touch a word character on either side
    (``(?<!\\w)answer(?!\\w)``), so a short answer such as ``"a"`` or ``"42"`` is not found
    inside ``"cat"`` or ``"1422"``.
    """
    normalized = normalize_text(text)
    return any(
        _answer_pattern(answer).search(normalized)
        for answer in map(normalize_answer, answers)
        if answer
    )
