"""BM25 over sentences or 300-word chunks, with bm25s (Lucene variant, English stemming)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from typing import Any, ClassVar

import numpy as np

from longscan.documents import Document
from longscan.retrievers.base import Retriever, UnitKind, Units


@cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: list[str], as_ids: bool = False) -> Any:
    """Stemmed English content terms (stop words dropped): lists of strings, or, with
    ``as_ids``, bm25s's compact ids plus vocabulary (what an index is built from)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build
    return bm25s.tokenize(
        texts, stopwords="en", stemmer=_stemmer(), show_progress=False, return_ids=as_ids
    )


class _NoTerms:
    """The index of texts without a single content term ("It is.", "?"): bm25s cannot build
    one, and no query term can match, so every score is 0."""

    vocab_dict: ClassVar[dict[str, int]] = {}

    def __init__(self, n_texts: int) -> None:
        self.n_texts = n_texts

    def get_scores(self, query_tokens: list[str]) -> np.ndarray:
        return np.zeros(self.n_texts)


def build_index(texts: list[str], k1: float = 1.5, b: float = 0.75) -> Any:
    """A bm25s index over ``texts``; query it with ``get_scores(tokenize([q])[0])``."""
    import bm25s

    tokens = tokenize(texts, as_ids=True)
    if not tokens.vocab:
        return _NoTerms(len(texts))
    index = bm25s.BM25(k1=k1, b=b)
    index.index(tokens, show_progress=False)
    return index


class BM25Retriever(Retriever):
    """Lexical baseline. The index of a collection is built once and kept (LRU) for re-queries.

    Args:
        unit: ``"sentence"`` or ``"chunk"`` (300 words, the seeds' "5 chunks" setting).
        k1, b: BM25 parameters (bm25s defaults).
        max_cached: Collections whose index stays in memory.
    """

    name: ClassVar[str] = "bm25"

    def __init__(
        self, unit: UnitKind = "sentence", k1: float = 1.5, b: float = 0.75, max_cached: int = 16
    ) -> None:
        self.unit = unit
        self.k1, self.b = k1, b
        self.max_cached = max_cached
        self._indexes: OrderedDict[tuple[str, ...], Any] = OrderedDict()
        self.index_builds = 0

    def _index(self, documents: Sequence[Document], units: Units) -> Any:
        key = (self.unit, *(document.content_hash for document in documents))
        if key in self._indexes:
            self._indexes.move_to_end(key)
            return self._indexes[key]
        index = build_index(units.texts, self.k1, self.b)
        self.index_builds += 1
        self._indexes[key] = index
        while len(self._indexes) > self.max_cached:
            self._indexes.popitem(last=False)
        return index

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        index = self._index(documents, units)
        vocabulary = index.vocab_dict
        tokens = [token for token in tokenize([query])[0] if token in vocabulary]
        if not tokens:  # only stop words or unseen words: no lexical evidence at all
            return np.zeros(len(units))
        return np.asarray(index.get_scores(tokens), dtype=np.float64)
