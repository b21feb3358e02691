"""BM25 with bm25s (Lucene variant, English stemming): the one tokenizer and index every
lexical ranking in longscan uses (the BM25 retrievers, the scan's rank columns, training)."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any, ClassVar

import numpy as np


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
    return index_tokens(tokenize(texts, as_ids=True), k1, b)


def index_tokens(tokens: Any, k1: float = 1.5, b: float = 0.75) -> Any:
    """A bm25s index over texts already tokenized (``tokenize(texts, as_ids=True)``), for
    callers that read the tokens too."""
    import bm25s

    if not tokens.vocab:
        return _NoTerms(len(tokens.ids))
    index = bm25s.BM25(k1=k1, b=b)
    index.index(tokens, show_progress=False)
    return index
