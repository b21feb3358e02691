"""BM25 over sentences or 300-word chunks (``longscan.lexical.bm25``)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from longscan.documents import Document
from longscan.lexical.bm25 import build_index, tokenize
from longscan.retrievers.base import Retriever, UnitKind, Units


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
