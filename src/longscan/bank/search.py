"""Search a memory bank: a fast first stage proposes documents, the scanner ranks them.

The first stage is BM25, dense or their reciprocal-rank fusion over whole documents. The
scanner then reads the candidates in one pass over their concatenation (document
boundaries kept: each candidate is its own ``Document``), scores every sentence, and ranks a
document by its best sentence, fused with its first-stage rank so a candidate the scanner
reads poorly is not lost. The result carries document ids and sentence offsets.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from longscan.bank.errors import DenseIndexError
from longscan.bank.store import MemoryBank
from longscan.documents import Document, Evidence
from longscan.lexical.fusion import fuse_rankings
from longscan.selection import cite_table_context

if TYPE_CHECKING:
    from longscan.scanning.scanner import Scanner

FirstStage = Literal["bm25", "dense", "hybrid"]
SCANNED_TOKENS = 4_000  # of each candidate, by default: see ``search``
DEPTH = 50  # candidates the scanner reads, by default
logger = logging.getLogger(__name__)


@dataclass
class BankHit:
    """A document of the bank, its score, and (two-stage only) its best sentences and the
    part of the document the scanner read, which their offsets index (a prefix of the
    stored text, ``scanned_part``)."""

    doc_id: int
    key: str
    score: float
    evidence: list[Evidence] = field(default_factory=list)
    document: Document | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The hit for machines, its ``doc_id`` as in its evidence (``EVIDENCE_JSON_SCHEMA``):
        the bank id, as text."""
        return {
            "doc_id": str(self.doc_id),
            "key": self.key,
            "score": self.score,
            "evidence": [item.to_json() for item in self.evidence],
        }


def first_stage(
    bank: MemoryBank, query: str, depth: int, method: FirstStage
) -> list[tuple[int, float]]:
    """``depth`` candidate documents ``(id, score)``, best first.

    Hybrid search with an unreadable dense index falls back to BM25 alone, with a warning;
    dense search raises ``DenseIndexError``, which says how to repair the index.
    """
    if method == "bm25":
        return bank.search_bm25(query, depth)
    if method == "dense":
        return bank.search_dense(query, depth)
    if method == "hybrid":
        lexical = [doc_id for doc_id, _ in bank.search_bm25(query, depth)]
        try:
            semantic = [doc_id for doc_id, _ in bank.search_dense(query, depth)]
        except DenseIndexError as error:
            logger.warning("%s. Searching with BM25 alone.", error)
            return bank.search_bm25(query, depth)
        return fuse_rankings([lexical, semantic])[:depth]
    raise ValueError(f"unknown first stage {method!r}; choose bm25, dense or hybrid")


def search(
    bank: MemoryBank,
    query: str,
    k: int = 10,
    method: FirstStage = "hybrid",
    depth: int = DEPTH,
    scanner: Scanner | None = None,
    evidence_per_document: int = 3,
    max_tokens_per_document: int | None = SCANNED_TOKENS,
) -> list[BankHit]:
    """The top ``k`` documents; with ``scanner`` (a ``longscan.scanning.Scanner``), the
    two-stage ranking over ``depth`` first-stage candidates, with evidence sentences.

    ``max_tokens_per_document`` caps how much of each candidate the scanner reads (about 4
    characters a token, cut at a sentence end): a bank of long reports would otherwise cost
    a full scan of every long candidate.
    """
    candidates = first_stage(bank, query, depth if scanner is not None else k, method)
    documents = bank.get([doc_id for doc_id, _ in candidates])
    if scanner is None:
        keys = {d.id: d.key for d in documents}
        return [BankHit(i, keys[i], s) for i, s in candidates[:k] if i in keys]
    readable = [scanned_part(d.as_document(), max_tokens_per_document) for d in documents]
    logits = scanner.score(query, readable)
    hits, offset = [], 0
    best: list[float] = []
    for document in readable:
        n = len(document.sentences)
        scores = np.asarray(logits[offset : offset + n], dtype=np.float64)
        offset += n
        best.append(float(scores.max()) if n else -np.inf)
        top = np.argsort(-scores, kind="stable")[:evidence_per_document] if n else []
        hits.append(
            cite_table_context(
                [
                    Evidence.of(document, int(a), int(b), float(scores[i]), int(i))
                    for i in top
                    for a, b in [document.sentences[i]]
                ],
                [document],
            )
        )
    by_scanner = [documents[i].id for i in np.argsort(-np.asarray(best), kind="stable")]
    by_first = [d.id for d in documents]
    order = fuse_rankings([by_scanner, by_scanner, by_first])  # the scanner counts twice
    position = {d.id: i for i, d in enumerate(documents)}
    return [
        BankHit(
            doc_id,
            documents[position[doc_id]].key,
            score,
            hits[position[doc_id]],
            readable[position[doc_id]],
        )
        for doc_id, score in order[:k]
    ]


def scanned_part(document: Document, max_tokens: int | None) -> Document:
    """What the scanner reads of a candidate: the document cut after the sentence that passes
    ``max_tokens`` (4 characters each). Ingestion caches the sentence vectors of this part.

    Only a prefix is segmented (segmenting whole long reports took 2.4 of a query's 3.5 s):
    the sentence that passes the limit ends within one sentence cap of it.
    """
    if max_tokens is None or len(document.text) <= max_tokens * 4:
        return document
    read = max_tokens * 4 + 2 * document.max_sentence_chars
    if len(document.text) > read:
        document = replace(document, text=document.text[:read])
    ends = document.sentences[:, 1]
    stop = int(np.searchsorted(ends, max_tokens * 4)) + 1
    cut = int(ends[min(stop, len(ends)) - 1]) if len(ends) else max_tokens * 4
    return replace(document, text=document.text[:cut])
