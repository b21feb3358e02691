"""A query's first stage, run once: BM25 and dense scores of every sentence of the documents
read as one sequence.

The feature columns, the cross-encoder's second-hop candidates and the scan all read this
one result, so a query walks documents → index → first stage → columns → scan → re-scorer,
each stage called once and in that order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from longscan.documents import Document
from longscan.lexical.bm25 import index_tokens, tokenize
from longscan.lexical.fusion import ranks_of
from longscan.segment import count_words
from longscan.tables import rows_of_context


def rank_feature(scores: np.ndarray) -> np.ndarray:
    """``1 - log(rank) / log(n + 1)``: 1 for the best of n, near 0 for the worst.

    Ranks compare a sentence with the whole document, which the raw score cannot, and do not
    depend on the score's scale, so the scanner sees the same range on any document.
    """
    return (1 - np.log(ranks_of(scores)) / np.log(len(scores) + 1)).astype(np.float32)


def structure_features(document: Document) -> np.ndarray:
    """``(n, 3)``: paragraph start, position in paragraph, log length; query-independent."""
    owner = document.sentence_paragraph
    n = len(owner)
    result = np.zeros((n, 3), dtype=np.float32)
    if n == 0:
        return result
    starts = np.r_[True, owner[1:] != owner[:-1]]
    first_of_run = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    counts = np.bincount(owner)[owner]
    result[:, 0] = starts
    result[:, 1] = (np.arange(n) - first_of_run) / np.maximum(counts, 1)
    words = np.array([len(t.split()) for t in document.sentence_texts()])
    result[:, 2] = np.log1p(words) / 5
    return result


class SentenceIndex:
    """What a query needs of a sequence of documents that does not depend on the query:
    the BM25 index of its sentences (term ids in a sparse matrix, no strings kept), its
    structure columns (``structure_features``), what tells a sentence that adds nothing
    (``FirstStage.redundant``): its distinct content terms, whether it holds a digit, and
    which sentences of its document read the same; and each table's title, header and group
    lines with the rows they give meaning to (``FirstStage.rows_lifted``)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        texts = [text for document in documents for text in document.sentence_texts()]
        self.size = len(texts)
        self.words = np.array([count_words(text) for text in texts], dtype=np.int64)
        # each document's first sentence in the sequence, and the end of the last
        self.document_bounds = np.cumsum([0, *(len(d.sentences) for d in documents)])
        tokens = tokenize(texts, as_ids=True)
        self.bm25: Any = index_tokens(tokens)
        self.distinct_terms = np.array([len(set(ids)) for ids in tokens.ids], dtype=np.int64)
        # a sentence whose every word is a content term (no "it", "is", "and"): a name or a
        # title on a line of its own, not a sentence that says something
        self.terms_only = np.array([len(ids) for ids in tokens.ids]) == self.words
        self.has_digit = np.array([any(c.isdigit() for c in text) for text in texts], dtype=bool)
        self.same_text = _same_text_groups(texts, self.document_bounds)
        self.table_lines = [
            (int(first) + unit, int(first) + np.asarray(rows))
            for document, first in zip(documents, self.document_bounds, strict=False)
            for unit, rows in rows_of_context(document).items()
        ]
        self.structure = (
            np.concatenate([structure_features(d) for d in documents])
            if documents
            else np.zeros((0, 3), dtype=np.float32)
        )

    def known_terms(self, text: str) -> list[str]:
        """``text``'s distinct content terms that occur in the index."""
        return [t for t in dict.fromkeys(tokenize([text])[0]) if t in self.bm25.vocab_dict]

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 of every sentence for ``terms`` (known terms only; zeros when there are none)."""
        if not terms:
            return np.zeros(self.size)
        return np.asarray(self.bm25.get_scores(list(terms)), dtype=np.float64)

    def lexical(self, text: str) -> np.ndarray:
        """BM25 of every sentence for free text (the second hop's joined query)."""
        return self.scores(self.known_terms(text))


def _same_text_groups(texts: list[str], document_bounds: np.ndarray) -> np.ndarray:
    """A group id per sentence, shared by the sentences of one document that read the same
    (case and spacing aside): a report's running page header, "AND SUBSIDIARIES" under
    every statement's title."""
    groups: dict[tuple[int, str], int] = {}
    document = np.searchsorted(document_bounds, np.arange(len(texts)), side="right") - 1
    return np.array(
        [
            groups.setdefault((int(d), " ".join(text.lower().split())), len(groups))
            for d, text in zip(document.tolist(), texts, strict=True)
        ],
        dtype=np.int64,
    )


class SentenceIndexes:
    """The indexes of recently read sequences (re-queries skip indexing), least recent out."""

    def __init__(self, max_cached: int = 64) -> None:
        self.max_cached = max_cached
        self._indexes: OrderedDict[str, SentenceIndex] = OrderedDict()

    def __call__(self, documents: Sequence[Document]) -> SentenceIndex:
        key = "\x1f".join(document.content_hash for document in documents)
        if key in self._indexes:
            self._indexes.move_to_end(key)
            return self._indexes[key]
        index = SentenceIndex(documents)
        self._indexes[key] = index
        while len(self._indexes) > self.max_cached:
            self._indexes.popitem(last=False)
        return index


@dataclass(frozen=True)
class FirstStage:
    """BM25 and dense rankings of every sentence for one query.

    Attributes:
        query: The question.
        index: The sequence's ``SentenceIndex``.
        bm25: ``(n,)`` BM25 over the query's known terms (zeros when it has none).
        bm25_rank: ``rank_feature`` of ``bm25`` where it is positive, else 0.
        dense_rank: ``rank_feature`` of the sentence vectors' cosine with the query.
    """

    query: str
    index: SentenceIndex
    bm25: np.ndarray
    bm25_rank: np.ndarray
    dense_rank: np.ndarray

    @classmethod
    def run(
        cls, query: str, index: SentenceIndex, vectors: np.ndarray, query_vector: np.ndarray
    ) -> FirstStage:
        """Score every sentence once by BM25 and by the dense cosine."""
        bm25 = index.scores(index.known_terms(query))
        bm25_rank = np.zeros(index.size, dtype=np.float32)
        if index.size and bm25.max() > 0:
            bm25_rank = np.where(bm25 > 0, rank_feature(bm25), 0).astype(np.float32)
        dense_rank = (
            rank_feature(vectors @ query_vector) if len(vectors) else np.zeros(0, np.float32)
        )
        return cls(query, index, bm25, bm25_rank, dense_rank)

    def redundant(self, scores: np.ndarray) -> np.ndarray:
        """``(n,)`` True where a sentence adds nothing to what ranks above it under
        ``scores``: it is only words of the question (every word a content term that the
        query has, and no figure: the filer's name on a line of its own, asked "What is
        X's total assets?"; "It is published fortnightly." says something and stays), or
        it reads the same as a better-scored sentence of its document (a running page
        header)."""
        index = self.index
        terms = index.known_terms(self.query)
        matched = sum((index.scores([term]) > 0).astype(np.int64) for term in terms)
        echoes = (index.distinct_terms > 0) & (matched == index.distinct_terms)
        echoes &= index.terms_only & ~index.has_digit
        best_first = np.argsort(-scores, kind="stable")
        _, first = np.unique(index.same_text[best_first], return_index=True)
        repeats = np.ones(index.size, dtype=bool)
        repeats[best_first[first]] = False
        return echoes | repeats

    def rows_lifted(self, scores: np.ndarray) -> np.ndarray:
        """``scores`` with each table title, column header or row group standing for its
        table: the table's row that the first pass ranks best (``hybrid``: the question's
        words and meaning; ``scores`` breaking ties) is lifted to just above the line, if not
        above it already. Such a line holds no figure of its own, and a reader is shown it
        with the row anyway (``selection.with_table_context``), so the row is what its rank
        was for."""
        lifted = scores
        first_pass = self.hybrid
        for line, rows in self.index.table_lines:
            best = rows[np.lexsort((scores[rows], first_pass[rows]))[-1]]
            above = np.nextafter(scores[line], np.inf)
            if lifted[best] < above:
                lifted = lifted if lifted is not scores else scores.copy()
                lifted[best] = above
        return lifted

    @property
    def hybrid(self) -> np.ndarray:
        """``(n,)`` BM25 rank + dense rank: the first pass's one score for every sentence."""
        return self.bm25_rank + self.dense_rank

    def order(self) -> np.ndarray:
        """Sentence positions, best first, by the hybrid first pass (``hybrid``)."""
        return np.argsort(-self.hybrid, kind="stable")
