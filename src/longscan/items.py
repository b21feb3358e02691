"""One schema for every benchmark: a query, its documents, gold evidence and answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from longscan.documents import Document, check_unique_ids


def instructed_query(instruction: str, question: str) -> str:
    """A query as a prompt carries it: the instruction, a blank line, then the question.
    Benchmarks that prescribe an instruction, ``eval --instruction`` and the instructed
    training copies all ask it this way, so a scanner trained on one reads the others."""
    return f"{instruction}\n\n{question}"


@dataclass(frozen=True, slots=True)
class GoldSpan:
    """A gold evidence span: ``documents[doc_id].text[start:end]``."""

    doc_id: str
    start: int
    end: int


@dataclass
class QAItem:
    """One benchmark question over one or more documents.

    Attributes:
        id: Stable item id (dataset id, plus the builder's suffix).
        query: The question (with any instruction the benchmark prescribes).
        documents: The documents to search, with unique ids.
        gold_spans: Character spans that hold the evidence; empty when unknown.
        gold_doc_ids: Ids of the documents that hold evidence; empty when unknown.
        answers: Reference answers (any one counts).
        metadata: Source dataset, split, length in words, level, ...
    """

    id: str
    query: str
    documents: list[Document]
    gold_spans: list[GoldSpan] = field(default_factory=list)
    gold_doc_ids: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_unique_ids(self.documents)
        known = {document.id for document in self.documents}
        for span in self.gold_spans:
            if span.doc_id not in known:
                raise ValueError(f"{self.id}: gold span names unknown document {span.doc_id!r}")
            if not 0 <= span.start < span.end:
                raise ValueError(f"{self.id}: bad gold span {span}")

    @property
    def total_words(self) -> int:
        return sum(len(document.text.split()) for document in self.documents)

    def document(self, doc_id: str) -> Document:
        for document in self.documents:
            if document.id == doc_id:
                return document
        raise KeyError(doc_id)


def items_by_length(items: Sequence[QAItem]) -> list[QAItem]:
    return sorted(items, key=lambda item: item.total_words)
