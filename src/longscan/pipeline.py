"""From a question and documents to one cited ``Answer``: the steps every front end takes.

read (the caller) → prepare (the retriever's one-time work, with progress) → retrieve →
select (top k, then a word budget) → table context → abstain → answer → citations.
The command line, the service, the bank's questions, the framework integrations and the
benchmarks all call this, so a question gets the same evidence and answer through each.
The service runs ``find`` and ``respond`` apart (the scan on its worker thread, the answerer
beside it); ``answer`` is the two in a row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from longscan.answering.answerers import Answerer
from longscan.answering.llm import LLMError
from longscan.answering.pipelines import Answer, in_document_order
from longscan.documents import Document, Evidence
from longscan.retrievers.base import Progress, Retriever, validate_query
from longscan.selection import BUDGET_WORDS, check_widening, cite_table_context, select


@dataclass
class Found:
    """The evidence found for a question, before anyone answers from it."""

    question: str
    evidence: list[Evidence]
    documents: Sequence[Document]
    abstained: bool = False
    seconds: dict[str, float] = field(default_factory=dict)


class Pipeline:
    """A retriever, a selection and an answerer, asked one question at a time.

    Args:
        retriever: A retriever or its registered name (``longscan retrievers``); None when
            the caller ranks the evidence itself and hands it to ``settle`` (the bank).
        answerer: Who answers from the evidence (``answering.answerers``); None gives the
            evidence only.
        top_k: Evidence units kept, best first; None ranks every unit (for a budget).
        budget_words: Units are kept best first while their words fit (after ``top_k``,
            which then bounds the candidates); None keeps ``top_k`` units whatever their
            length.
        min_score: Keep only units scored above this (the retriever's scale).
        neighbours: Widen each kept unit by this many sentences on each side (within its
            paragraph), counted in the budget: a sentence read with its neighbours.
        paragraph: Widen each kept unit to its whole paragraph (the unit alone where the
            paragraph does not fit the budget); None (the default) widens to paragraphs
            unless ``neighbours`` are asked for. Paragraphs by default: with the scanner's
            sentences read in their paragraphs, the local model's answers were at least as
            good as with any other retriever's evidence on single- and multi-hop development
            sets; read alone, they lost to BM25's chunks on single-passage questions.
        widened: Widen only the best this many units (None: every one).
        abstain: Ask no answerer when the re-scorer judges none of the evidence an answer.
    """

    def __init__(
        self,
        retriever: str | Retriever | None = "scanner",
        answerer: Answerer | None = None,
        *,
        top_k: int | None = None,
        budget_words: int | None = BUDGET_WORDS,
        min_score: float | None = None,
        neighbours: int = 0,
        paragraph: bool | None = None,
        widened: int | None = None,
        abstain: bool = True,
    ) -> None:
        if isinstance(retriever, str):
            from longscan.retrievers import get_retriever

            retriever = get_retriever(retriever)
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be positive")
        if budget_words is not None and budget_words < 1:
            raise ValueError("budget_words must be positive")
        if top_k is None and budget_words is None:
            raise ValueError("give top_k or budget_words: with neither, every unit is evidence")
        paragraph = neighbours == 0 if paragraph is None else paragraph
        check_widening(neighbours, paragraph, widened)
        self.retriever = retriever
        self.answerer = answerer
        self.top_k = top_k
        self.budget_words = budget_words
        self.min_score = min_score
        self.neighbours = neighbours
        self.paragraph = paragraph
        self.widened = widened
        self.abstain = abstain

    def prepare(self, documents: Sequence[Document], on_progress: Progress | None = None) -> None:
        """The retriever's one-time reading of new documents (see ``Retriever.prepare``)."""
        self._retriever().prepare(documents, on_progress)

    def _retriever(self) -> Retriever:
        if self.retriever is None:
            raise ValueError("this pipeline has no retriever: hand ranked evidence to settle()")
        return self.retriever

    def find(
        self,
        question: str,
        documents: Sequence[Document],
        on_progress: Progress | None = None,
        top_k: int | None = None,
    ) -> Found:
        """The selected evidence for ``question`` (best first) and the abstention judgement;
        ``top_k`` overrides the pipeline's for this question.

        Raises:
            ValueError: an empty or oversized question, or no documents.
        """
        validate_query(question)
        seconds: dict[str, float] = {}
        started = time.perf_counter()
        self.prepare(documents, on_progress)
        seconds["prepare"] = time.perf_counter() - started
        started = time.perf_counter()
        ranked = self._retriever().retrieve(question, documents, top_k=top_k or self.top_k)
        seconds["retrieve"] = time.perf_counter() - started
        return self.settle(question, ranked, documents, seconds)

    def settle(
        self,
        question: str,
        ranked: Sequence[Evidence],
        documents: Sequence[Document],
        seconds: dict[str, float] | None = None,
    ) -> Found:
        """Ranked evidence (best first) → ``min_score`` → the budget → table context → the
        abstention judgement: the steps after retrieval, for any ranking (``find``'s, or the
        bank's two-stage search). The judge reads the best units as ranked, before any
        widening: its threshold was calibrated on them."""
        seconds = dict(seconds or {})
        started = time.perf_counter()
        if self.min_score is not None:
            ranked = [item for item in ranked if item.score > self.min_score]
        chosen = select(
            ranked,
            documents,
            budget_words=self.budget_words,
            neighbours=self.neighbours,
            paragraph=self.paragraph,
            widened=self.widened,
        )
        evidence = cite_table_context(chosen, documents)
        seconds["retrieve"] = seconds.get("retrieve", 0.0) + time.perf_counter() - started
        abstained = False
        if self.abstain and evidence:
            from longscan.rerankers.abstention import abstains

            started = time.perf_counter()
            abstained = abstains(question, ranked, documents)
            seconds["judge"] = time.perf_counter() - started
        return Found(question, evidence, documents, abstained, seconds)

    def respond(self, found: Found) -> Answer:
        """The answerer's answer from what ``find`` found; an empty answer when it abstained,
        found nothing or has no answerer, and the error when the answerer failed."""
        ordered = in_document_order(found.evidence, found.documents)
        empty = Answer(
            "",
            ordered,
            ranked=list(found.evidence),
            abstained=found.abstained,
            seconds=dict(found.seconds),
        )
        if self.answerer is None or found.abstained or not found.evidence:
            return empty
        started = time.perf_counter()
        try:
            answer = self.answerer.answer(found.question, found.evidence, found.documents)
        except LLMError as error:
            empty.answerer, empty.error = self.answerer.name, str(error)
            return empty
        answer.ranked = list(found.evidence)
        answer.seconds = {**found.seconds, "answer": time.perf_counter() - started}
        return answer

    def answer(
        self,
        question: str,
        documents: Sequence[Document],
        on_progress: Progress | None = None,
    ) -> Answer:
        """``respond(find(...))``: the cited answer with its evidence and timings."""
        return self.respond(self.find(question, documents, on_progress))


def answer(
    question: str,
    documents: Sequence[Document],
    *,
    retriever: str | Retriever = "scanner",
    answerer: str = "auto",
    top_k: int | None = None,
    budget_words: int | None = BUDGET_WORDS,
    paragraph: bool = True,
) -> Answer:
    """One question over ``documents`` with the defaults the command line uses: the
    scanner's evidence and the ``auto`` answerer (a configured server, else the local
    instruct model when installed, else the extractive reader)."""
    from longscan.answering.answerers import get_answerer
    from longscan.answering.llm import resolve_config

    chosen = get_answerer(answerer, resolve_config())
    pipeline = Pipeline(
        retriever, chosen, top_k=top_k, budget_words=budget_words, paragraph=paragraph
    )
    return pipeline.answer(question, documents)
