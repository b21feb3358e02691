"""Who answers from the evidence: a configured OpenAI-compatible server, the local instruct
model in this process, or the extractive reader, all behind one ``Answerer`` interface.

``auto`` takes the first that is available in that order: a server the user configured wins,
then the local instruct model (extra ``[answerer]``), then the extractive reader, which is
always in the package.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from longscan.answering.llm import LLMClient, LLMConfig
from longscan.answering.pipelines import (
    NOT_FOUND,
    Answer,
    ChatModel,
    answer_from_cited,
    answer_with_evidence,
    in_document_order,
    words_outside_citations,
)
from longscan.answering.prompts import ANSWER_WITH_EVIDENCE
from longscan.documents import Document, Evidence

if TYPE_CHECKING:
    from longscan.answering.extractive import ExtractiveReader

ANSWERERS = ("auto", "llm", "local", "extractive", "none")
CITED_ONLY = (
    "the model replied with citations alone, twice; the answer is the extractive reader's "
    "span in the evidence it cited"
)


class Answerer(Protocol):
    """Answers a question from evidence it is given (any order; answers cite in document
    order), never from anything else."""

    name: str

    def answer(
        self, question: str, evidence: Sequence[Evidence], documents: Sequence[Document]
    ) -> Answer: ...


class ChatAnswerer:
    """A chat model answering from numbered evidence, citing it as ``[n]``.

    A small model sometimes replies with the citation alone ("[12]"): it found the evidence
    but wrote no answer (measured: about one reply in three from 300 words of SQuAD
    sentences, and one in two from the gold sentences alone). It is then asked again with
    only the evidence it cited, unnumbered, and its answer keeps those citations. If that
    reply holds no words either, the extractive reader marks the answer inside the cited
    evidence, with its exact offsets, and the answer says so in its warnings.
    """

    # Benchmarks key answers by this. 1 left a reply of citations alone as it was; 2 read
    # it with the extractive reader; 3 asks the model again first.
    procedure = 3

    def __init__(self, chat: ChatModel, name: str, reader: ExtractiveReader | None = None) -> None:
        self.chat = chat
        self.name = name
        self._reader = reader

    @property
    def reader(self) -> ExtractiveReader:
        if self._reader is None:  # loaded the first time a reply needs it
            self._reader = _always_answering_reader()
        return self._reader

    def answer(
        self, question: str, evidence: Sequence[Evidence], documents: Sequence[Document]
    ) -> Answer:
        answer = answer_with_evidence(self.chat, question, evidence, documents)
        answer.answerer = self.name
        if answer.citations and not words_outside_citations(answer.text):
            answer = answer_from_cited(self.chat, question, answer, documents)
        if answer.citations and not words_outside_citations(answer.text):
            span = read_span(self.reader, question, answer.evidence, answer.citations, documents)
            if span is not None:
                answer.text, answer.span, item = span
                answer.citations = [item]
                answer.warnings = [*answer.warnings, CITED_ONLY]
        return answer


def _always_answering_reader() -> ExtractiveReader:
    """The shipped reader with no "no answer" threshold (see ``ExtractiveAnswerer``)."""
    from longscan.answering.extractive import get_reader

    return get_reader(threshold=-math.inf)


def read_span(
    reader: ExtractiveReader,
    question: str,
    evidence: Sequence[Evidence],
    read: Sequence[Evidence],
    documents: Sequence[Document],
) -> tuple[str, Evidence, Evidence] | None:
    """The reader's answer among the items ``read`` of ``evidence`` (numbered from 1 in
    ``evidence``): its text with its citation, the span's exact offsets, and the item it
    lies in; None when the reader finds no span."""
    span = reader.read(question, list(read))
    if span is None:
        return None
    item = read[span.evidence]
    document = next(d for d in documents if d.id == span.doc_id)
    marked = Evidence.of(document, span.start, span.end, span.score, item.unit)
    number = next(n for n, given in enumerate(evidence, start=1) if given is item)
    return f"{span.text} [{number}]", marked, item


def local_answerer_installed() -> bool:
    """Whether the in-process instruct model's runtime is installed (its parts are checked
    when it loads)."""
    return importlib.util.find_spec("gpt4all") is not None


def get_answerer(name: str = "auto", llm: LLMConfig | None = None) -> Answerer | None:
    """The answerer called ``name`` (one of ``ANSWERERS``); None for ``none``.

    Raises:
        ValueError: an unknown name, or ``llm`` without a configured server.
        RuntimeError: the local model is asked for and not installed (with how to).
    """
    if name not in ANSWERERS:
        raise ValueError(f"unknown answerer {name!r}; use one of {', '.join(ANSWERERS)}")
    if name == "auto":
        name = "llm" if llm is not None else "local" if local_answerer_installed() else "extractive"
    if name == "none":
        return None
    if name == "llm":
        if llm is None:
            from longscan.answering.llm import HOW_TO_ADD_AN_LLM

            raise ValueError(f"--answerer llm needs a server. {HOW_TO_ADD_AN_LLM}")
        return ChatAnswerer(LLMClient(llm), llm.model)
    if name == "local":
        from longscan.answering.inprocess import InProcessChat

        chat = InProcessChat()
        chat.read_ahead(ANSWER_WITH_EVIDENCE.system)
        return ChatAnswerer(chat, chat.name)
    return ExtractiveAnswerer()


class ExtractiveAnswerer:
    """The extractive reader's span as the answer, citing the one evidence item it lies in.

    The reader answers whenever the evidence holds any span (no threshold): the pipeline's
    abstention judge has already decided that the evidence answers, and the shipped
    reader, at its own "no answer" threshold, declined 34% of answerable development
    questions (SQuAD F1 0.40 against 0.56 when it always answers; BENCHMARKS.md)."""

    name = "extractive"

    def __init__(self, reader: ExtractiveReader | None = None) -> None:
        self.reader = reader or _always_answering_reader()

    def answer(
        self, question: str, evidence: Sequence[Evidence], documents: Sequence[Document]
    ) -> Answer:
        ordered = in_document_order(evidence, documents)
        found = read_span(self.reader, question, ordered, ordered, documents)
        if found is None:
            return Answer(NOT_FOUND, ordered, answerer=self.name)
        text, marked, item = found
        return Answer(text, ordered, [item], span=marked, answerer=self.name)
