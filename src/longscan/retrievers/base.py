"""The one retriever interface: ``retrieve(query, documents) -> list[Evidence]``.

Retrievers rank *units* (sentences or fixed word chunks) of a collection. Units are flat
arrays over the collection, so BM25 statistics and dense scores are computed across all the
documents a query is asked over, exactly as a user would expect from one search box.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from longscan.documents import Document, Evidence, check_unique_ids, lone_surrogate

UnitKind = Literal["sentence", "chunk"]
Progress = Callable[[int, int], None]  # (units read so far, units to read)
MAX_QUERY_CHARS = 8_000
CHUNK_WORDS = 300


def validate_query(query: str) -> str:
    """Reject queries no retriever can answer, with a message a user can act on."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the query is empty; ask a question with at least one word")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(
            f"the query has {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
        )
    if where := lone_surrogate(query):
        raise ValueError(f"the query holds a lone surrogate ({where}), which is not text")
    return query.strip()


def validate_documents(documents: Sequence[Document]) -> None:
    """Reject an empty collection, duplicate ids and text that is not valid Unicode."""
    if not documents:
        raise ValueError("no documents to search")
    check_unique_ids(documents)
    for document in documents:
        if where := document.lone_surrogate:
            raise ValueError(
                f"document {document.id!r} holds a lone surrogate ({where}), which is not "
                "text; decode its bytes with errors='replace' or read it with read_file"
            )


def validate_top_k(top_k: int | None) -> None:
    """``top_k`` is None (every unit) or a positive int: 0 or -1 would silently cut a list."""
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1
    ):
        raise ValueError(f"top_k must be a positive integer or None, not {top_k!r}")


def validate_request(query: str, documents: Sequence[Document], top_k: int | None) -> str:
    """Check a ``retrieve`` call's arguments (every retriever honours the same limits) and
    return the query as it will be read."""
    query = validate_query(query)
    validate_documents(documents)
    validate_top_k(top_k)
    return query


@dataclass(frozen=True)
class Units:
    """The units of a collection, flattened.

    Attributes:
        doc_index: ``(n,)`` index into the documents of each unit.
        spans: ``(n, 2)`` character spans of each unit in its document.
        local_index: ``(n,)`` index of the unit inside its document.
        texts: The n unit texts.
    """

    doc_index: np.ndarray
    spans: np.ndarray
    local_index: np.ndarray
    texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def of(cls, documents: Sequence[Document], kind: UnitKind) -> Units:
        doc_index, spans, local, texts = [], [], [], []
        for index, document in enumerate(documents):
            doc_spans = document.sentences if kind == "sentence" else document.chunks(CHUNK_WORDS)
            doc_index.append(np.full(len(doc_spans), index, dtype=np.int64))
            spans.append(doc_spans)
            local.append(np.arange(len(doc_spans), dtype=np.int64))
            texts.extend(document.text[start:end] for start, end in doc_spans.tolist())
        return cls(
            doc_index=np.concatenate(doc_index) if doc_index else np.zeros(0, np.int64),
            spans=np.concatenate(spans).reshape(-1, 2) if spans else np.zeros((0, 2), np.int64),
            local_index=np.concatenate(local) if local else np.zeros(0, np.int64),
            texts=texts,
        )

    def evidence(
        self, documents: Sequence[Document], scores: np.ndarray, top_k: int | None
    ) -> list[Evidence]:
        """Rank units by ``scores`` ``(n,)`` (ties keep document order) into Evidence."""
        order = np.argsort(-scores, kind="stable")
        if top_k is not None:
            order = order[:top_k]
        result = []
        for i in order.tolist():
            document = documents[int(self.doc_index[i])]
            start, end = (int(v) for v in self.spans[i])
            result.append(
                Evidence.of(document, start, end, float(scores[i]), int(self.local_index[i]))
            )
        return result


class Retriever(ABC):
    """Ranks the units of a collection for a query.

    Subclasses implement ``score_units``; ``retrieve`` validates the input and turns scores
    into Evidence, so every retriever returns the same type and honours the same limits.
    """

    name: ClassVar[str]
    unit: UnitKind = "sentence"

    def retrieve(
        self, query: str, documents: Sequence[Document], top_k: int | None = None
    ) -> list[Evidence]:
        """Rank evidence for ``query`` over ``documents``; ``top_k=None`` ranks every unit."""
        query = validate_request(query, documents, top_k)
        units = self.units(documents)
        if len(units) == 0:
            return []
        scores = np.asarray(self.score_units(query, documents, units), dtype=np.float64)
        if scores.shape != (len(units),):
            raise RuntimeError(f"{self.name}: got {scores.shape} scores for {len(units)} units")
        return units.evidence(documents, scores, top_k)

    def prepare(self, documents: Sequence[Document], on_progress: Progress | None = None) -> None:
        """Do once what every later question over ``documents`` reuses (the scanner encodes
        each sentence in its context: minutes for a book), reporting ``(done, total)``.
        Retrievers with nothing slow to do first do nothing."""
        del documents, on_progress

    def units(self, documents: Sequence[Document]) -> Units:
        return Units.of(documents, self.unit)

    @abstractmethod
    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        """Return ``(len(units),)`` scores, higher is more relevant."""
