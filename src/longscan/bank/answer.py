"""A question over a memory bank, answered through the same pipeline as ``longscan ask``.

The bank's two-stage search (first stage, then the scanner over the candidates) ranks the
evidence; the pipeline then applies the word budget, table context, abstention, the
answerer and the citation checks, exactly as for documents given by hand. Evidence and
citations name the bank's document ids with offsets into the stored text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from longscan.answering.pipelines import Answer
from longscan.bank.search import DEPTH, FirstStage, search
from longscan.bank.store import MemoryBank
from longscan.documents import Document, Evidence
from longscan.pipeline import Pipeline
from longscan.retrievers.base import validate_query

if TYPE_CHECKING:
    from longscan.scanning.scanner import Scanner


@dataclass
class BankAnswer:
    """The pipeline's answer and the bank documents its evidence lies in (the part of each
    that the scanner read: a prefix of the stored text, which the offsets index)."""

    answer: Answer
    documents: list[Document]


def ask(
    bank: MemoryBank,
    question: str,
    pipeline: Pipeline,
    scanner: Scanner,
    *,
    k: int = 5,
    method: FirstStage = "hybrid",
    depth: int = DEPTH,
    evidence_per_document: int = 3,
) -> BankAnswer:
    """Answer ``question`` from the ``k`` best documents of ``bank``, each giving up to
    ``evidence_per_document`` sentences, ranked together by the scanner's score (one pass
    scored them all, so the scores compare across documents).

    Raises:
        ValueError: an empty or oversized question.
    """
    question = validate_query(question)
    hits = search(bank, question, k, method, depth, scanner, evidence_per_document)
    # what the scan read, segmented once: long reports are not read or segmented again
    documents = [hit.document for hit in hits if hit.document is not None]
    ranked: list[Evidence] = sorted(
        (e for hit in hits for e in hit.evidence), key=lambda e: -e.score
    )
    found = pipeline.settle(question, ranked, documents)
    return BankAnswer(pipeline.respond(found), documents)
