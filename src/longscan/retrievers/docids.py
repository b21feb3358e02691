"""In-context retrieval by citation behind the common retriever interface: a causal LM reads
300-word chunks as ``[DOC i]`` blocks and names (ID), copies from (ID+C) or quotes (ID+Q)
the ones it needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document, Evidence
from longscan.incontext.docids import Format, Passage, passages_of
from longscan.incontext.reader import InContextReader, Reply
from longscan.retrievers.base import Retriever, Units, validate_request

FORMAT_NAMES = {Format.ID: "icr-id", Format.ID_C: "icr-id-c", Format.ID_Q: "icr-id-q"}


class CitationRetriever(Retriever):
    """The chunks a causal LM cites, first cited first, led by the exact spans of its quotes
    or copied content (ID+Q, ID+C) when they are found in the chunks. Chunks it does not cite
    are not evidence: a reply that cites nothing returns nothing.

    Args:
        reader: the in-context reader (it keeps replies, so answer-level runs reuse them).
        fmt: ID, ID+C or ID+Q.
    """

    name: ClassVar[str] = "icr"
    unit = "chunk"

    def __init__(self, reader: InContextReader, fmt: Format) -> None:
        if fmt not in FORMAT_NAMES:
            raise ValueError(f"{fmt} names no documents; use one of {', '.join(FORMAT_NAMES)}")
        self.reader = reader
        self.fmt = fmt
        self.name = FORMAT_NAMES[fmt]  # type: ignore[misc]

    def reply(self, query: str, documents: Sequence[Document], units: Units) -> Reply:
        passages = passages_of(units.doc_index, units.spans)
        return self.reader.reply(query, documents, passages, self.fmt)

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        """``len(cited) - rank`` for cited chunks, ``-inf`` for the others."""
        return _cited_scores(self.reply(query, documents, units).cited, len(units))

    def retrieve(
        self, query: str, documents: Sequence[Document], top_k: int | None = None
    ) -> list[Evidence]:
        query = validate_request(query, documents, top_k)
        units = self.units(documents)
        reply = self.reply(query, documents, units)
        found = [
            Evidence.of(
                documents[f.doc_index],
                f.start,
                f.end,
                float(len(reply.cited) + 1 + f.ratio),
                _unit_of(units, f.doc_index, f.start),
            )
            for f in reply.found
        ]
        quoted = {(e.doc_id, e.unit) for e in found}
        scores = _cited_scores(reply.cited, len(units))
        chunks = [
            e
            for e in units.evidence(documents, scores, len(reply.cited))
            if (e.doc_id, e.unit) not in quoted
        ]
        return (found + chunks)[:top_k]


def chunk_passages(documents: Sequence[Document]) -> list[Passage]:
    """The 300-word chunks a citation retriever shows the model, as passages."""
    units = Units.of(documents, CitationRetriever.unit)
    return passages_of(units.doc_index, units.spans)


def _cited_scores(cited: Sequence[int], count: int) -> np.ndarray:
    scores = np.full(count, -np.inf)
    scores[list(cited)] = len(cited) - np.arange(len(cited))
    return scores


def _unit_of(units: Units, doc_index: int, start: int) -> int:
    """The index (within its document) of the chunk that holds ``start``."""
    mine = units.doc_index == doc_index
    inside = mine & (units.spans[:, 0] <= start) & (start < units.spans[:, 1])
    return int(units.local_index[np.flatnonzero(inside)[0]]) if inside.any() else 0
