"""From evidence (or the whole text) to a cited answer.

Two ways, as in the seed papers: retrieve-then-answer, where the selected sentences go to
the LLM in document order, numbered and labelled with their document, and the answer's
``[n]`` citations map back to character offsets; and full-context answering, where a text
over the model's window is read in windows (SPScanner: 120k tokens, stride 60k) whose
answers the same LLM merges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from longscan.answering.llm import Completion, LLMClient, Message
from longscan.answering.prompts import (
    ANSWER_FROM_CITED,
    ANSWER_WINDOW,
    ANSWER_WITH_EVIDENCE,
    MERGE_WINDOW_ANSWERS,
)
from longscan.answering.tokens import count_each, count_tokens
from longscan.documents import Document, Evidence
from longscan.scanning.features import ENGLISH_STOP_WORDS
from longscan.scanning.scanner import SlidingWindow
from longscan.tables import table_context

_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W\d_]{3,}")
# "six" in the evidence backs a "6" in the answer
_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_TENS = {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
NUMBER_WORDS = {word: value for value, word in enumerate(_UNITS.split(" "))} | _TENS
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
SUPPORTED_SHARE = 0.5  # of an answer's content words, found in what it cites
NOT_FOUND = "NOT FOUND"
PROMPT_MARGIN_TOKENS = 300  # instructions, question and chat template around the text
SAMPLE_SENTENCES = 200  # sentences the model's tokenizer counts to scale cl100k counts
PAPER_WINDOW_TOKENS = 120_000


class ChatModel(Protocol):
    """What answering needs of a model: one chat completion (an OpenAI-compatible server
    through ``LLMClient``, or the in-process local model)."""

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> Completion: ...


@dataclass
class Answer:
    """An answer, the evidence it was given and the pieces it cited (with offsets).

    Attributes:
        text: The answer; ``[n]`` cites ``evidence[n - 1]``. Empty when none was given
            (abstained, no answerer, or an error).
        evidence: What the answerer read, in document order, numbered from 1.
        ranked: The same evidence best first, as the retriever ranked it.
        citations: The evidence items the text cites, first mention first.
        span: For an extractive answer, the answer itself as exact offsets in its document
            (inside one cited item); else None.
        warnings: What the evidence given does not back (``citation_warnings``).
        answerer: Which model or reader answered ("" when none did).
        abstained: The re-scorer judged none of the best evidence an answer, so no answerer
            was asked.
        error: Why the answerer gave no answer (an unreachable server, a prompt too long).
        seconds: Wall time per step ("prepare", "retrieve", "judge", "answer").
        tokens: The answerer's prompt and completion tokens, when it counts them.
    """

    text: str
    evidence: list[Evidence] = field(default_factory=list)
    citations: list[Evidence] = field(default_factory=list)
    mode: str = "evidence"
    windows: int = 1
    warnings: list[str] = field(default_factory=list)
    span: Evidence | None = None
    ranked: list[Evidence] = field(default_factory=list)
    answerer: str = ""
    abstained: bool = False
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The reply to a question as JSON, the same from the CLI and the service: whether it
        abstained, the evidence best first, the answer (null when no answerer replied) with
        the evidence it read numbered as it cites it, and the answerer's error."""
        answered = None
        if self.answerer and self.error is None:
            answered = {
                "text": self.text,
                "model": self.answerer,
                "evidence": [item.to_json() for item in self.evidence],
                "citations": [item.to_json() for item in self.citations],
                "span": None if self.span is None else self.span.to_json(),
                "warnings": list(self.warnings),
                "tokens": dict(self.tokens),
            }
        return {
            "abstained": self.abstained,
            "evidence": [item.to_json() for item in self.ranked],
            "answer": answered,
            "llm_error": self.error,
            "seconds": round(sum(self.seconds.values()), 4),
            "timings": {step: round(value, 4) for step, value in self.seconds.items()},
        }


def in_document_order(
    evidence: Sequence[Evidence], documents: Sequence[Document]
) -> list[Evidence]:
    """Evidence sorted by the documents' order, then by position in the document."""
    rank = {document.id: i for i, document in enumerate(documents)}
    return sorted(evidence, key=lambda e: (rank.get(e.doc_id, len(rank)), e.start))


def with_context(texts: Sequence[str], contexts: Sequence[str]) -> list[str]:
    """Each text, whitespace collapsed, followed by its row's ``table_context`` in braces
    unless the line above had the same one: rows of one table read under one header, as a
    statement prints them. ``contexts[i]`` is "" for a line that is no row with context.

    (Not in ``tables``: that module's hash keys every cached ``+rows`` vector.)"""
    lines, shown = [], ""
    for text, context in zip(texts, contexts, strict=True):
        line = " ".join(text.split())
        lines.append(f"{line} {{{context}}}" if context and context != shown else line)
        shown = context
    return lines


def evidence_lines(evidence: Sequence[Evidence], documents: Sequence[Document]) -> list[str]:
    """``with_context`` of the evidence: a table row of one of ``documents`` is followed by
    its ``table_context``."""
    by_id = {document.id: document for document in documents}
    contexts = [
        table_context(by_id[item.doc_id], item) if item.doc_id in by_id else "" for item in evidence
    ]
    return with_context([item.text for item in evidence], contexts)


def format_evidence(evidence: Sequence[Evidence], documents: Sequence[Document] = ()) -> str:
    """``[n] (document id) text`` lines; n is what the answer cites. The document id is left
    out when all the evidence comes from one document (a path's dozen tokens per line would
    cost a local model seconds and tell it nothing). A table row of one of ``documents`` is
    followed by its ``table_context`` in braces, unless the line above gave the same one
    (rows of one table in document order)."""
    lines = evidence_lines(evidence, documents)
    labelled = len({item.doc_id for item in evidence}) > 1
    return "\n".join(
        f"[{n}] ({item.doc_id}) {line}" if labelled else f"[{n}] {line}"
        for n, (item, line) in enumerate(zip(evidence, lines, strict=True), start=1)
    )


def words_outside_citations(text: str) -> bool:
    """Whether an answer says anything besides its ``[n]`` citations."""
    return bool(_CITATION.sub(" ", text).strip(" \t\n.,;:"))


def cited_numbers(text: str) -> list[int]:
    """The numbers an answer cites as ``[3]``, ``[2, 5]`` or ``[2][5]``, each once, first
    mention first."""
    groups = _CITATION.findall(text)
    return list(dict.fromkeys(int(n) for g in groups for n in re.split(r"\s*[,;]\s*", g)))


def parse_citations(text: str, evidence: Sequence[Evidence]) -> list[Evidence]:
    """The evidence items an answer cites (``cited_numbers``), first mention first; numbers
    outside the evidence list are ignored."""
    return [evidence[n - 1] for n in cited_numbers(text) if 1 <= n <= len(evidence)]


def citation_warnings(
    text: str,
    evidence: Sequence[Evidence],
    documents: Sequence[Document] = (),
    question: str = "",
) -> list[str]:
    """What in an answer the evidence it was given does not back, for the reader to see
    beside it: a cited number that names no evidence; an answer that cites nothing; a
    number (a figure, a year) found in no cited evidence; an answer whose key phrase is
    mostly in no cited evidence. The key phrase is the content words of the answer's first
    sentence that the question does not already hold (a model's explanation after it, and
    the question's own words, say nothing about where the answer came from). Cited evidence
    is read with its table context, as the model read it. "NOT FOUND" needs no backing."""
    body = _CITATION.sub(" ", text)
    given = len(evidence)
    warnings = []
    if outside := sorted(n for n in cited_numbers(text) if not 1 <= n <= given):
        listed = ", ".join(f"[{n}]" for n in outside)
        warnings.append(f"cites {listed}, which no evidence given has (it was given [1]–[{given}])")
    if not body.strip() or NOT_FOUND in body.upper():
        return warnings
    cited = parse_citations(text, evidence)
    if not cited:
        return [*warnings, "cites no evidence: nothing shown backs it"]
    backing = " ".join(evidence_lines(cited, documents)).lower()
    figures = {n.replace(",", "") for n in _NUMBER.findall(backing)}
    figures |= {str(NUMBER_WORDS[w]) for w in _WORD.findall(backing) if w in NUMBER_WORDS}
    if unbacked := [
        n for n in dict.fromkeys(_NUMBER.findall(body)) if n.replace(",", "") not in figures
    ]:
        warnings.append(f"{', '.join(unbacked)}: in no evidence it cites")
    asked = set(_WORD.findall(question.lower())) | ENGLISH_STOP_WORDS
    words = {w for w in _WORD.findall(_first_sentence(body).lower()) if w not in asked}
    found = {w for w in words if w in backing}
    if words and len(found) < SUPPORTED_SHARE * len(words):
        warnings.append(
            f"most of its key words are in no evidence it cites ({len(found)} of {len(words)})"
        )
    return warnings


def _first_sentence(text: str) -> str:
    """The text up to its first sentence end (a full stop, ! or ? before a space or a
    line break), all of it when it has none."""
    match = _SENTENCE_END.search(text)
    return text if match is None else text[: match.start() + 1]


def answer_with_evidence(
    client: ChatModel,
    question: str,
    evidence: Sequence[Evidence],
    documents: Sequence[Document],
) -> Answer:
    """The model's answer from the evidence, numbered in document order, with the items it
    cites and what they do not back."""
    ordered = in_document_order(evidence, documents)
    completion = client.chat(
        ANSWER_WITH_EVIDENCE.messages(
            evidence=format_evidence(ordered, documents), question=question
        )
    )
    return Answer(
        completion.text,
        ordered,
        parse_citations(completion.text, ordered),
        mode="evidence",
        warnings=citation_warnings(completion.text, ordered, documents, question),
        tokens={"prompt": completion.prompt_tokens, "completion": completion.completion_tokens},
    )


def answer_from_cited(
    client: ChatModel, question: str, answer: Answer, documents: Sequence[Document]
) -> Answer:
    """``answer`` (a reply of citations alone) asked again from the evidence it cited, as
    one unnumbered passage: the reply's words with the same citations, checked as any
    answer is. ``answer`` itself when the new reply holds no words either."""
    passage = "\n".join(evidence_lines(in_document_order(answer.citations, documents), documents))
    completion = client.chat(ANSWER_FROM_CITED.messages(evidence=passage, question=question))
    words = _CITATION.sub(" ", completion.text).strip()
    tokens = {
        "prompt": answer.tokens.get("prompt", 0) + completion.prompt_tokens,
        "completion": answer.tokens.get("completion", 0) + completion.completion_tokens,
    }
    answer.tokens = tokens
    if not words_outside_citations(words) or NOT_FOUND in words.upper():
        return answer
    text = f"{words} {answer.text.strip()}"
    answer.text = text
    answer.warnings = citation_warnings(text, answer.evidence, documents, question)
    return answer


def text_windows(
    documents: Sequence[Document],
    window_tokens: int,
    stride_tokens: int,
    count: Callable[[str], int] | None = None,
) -> list[str]:
    """The documents (each headed by its id) cut at sentence ends into windows of at most
    about ``window_tokens`` tokens, a new window every ``stride_tokens``.

    Sentences are counted in cl100k; with ``count`` (the model's tokenizer), those counts are
    scaled by the ratio of the two on a sample of the sentences, so a window fits the model
    without a call per sentence."""
    pieces = [
        (f"[{document.id}] " if i == 0 else "") + text
        for document in documents
        for i, text in enumerate(document.sentence_texts())
    ]
    if not pieces:
        return []
    tokens = np.asarray(count_each(pieces), dtype=np.float64)
    if count is not None:
        step = max(1, len(pieces) // SAMPLE_SENTENCES)
        sample = " ".join(pieces[::step][:SAMPLE_SENTENCES])
        tokens *= count(sample) / max(count_tokens(sample), 1)
    windows = SlidingWindow(window_tokens, stride_tokens).windows(np.maximum(tokens, 1.0))
    return [" ".join(pieces[start:stop]) for start, stop in windows]


def answer_full_context(
    client: LLMClient,
    question: str,
    documents: Sequence[Document],
    window_tokens: int | None = None,
    stride_tokens: int | None = None,
) -> Answer:
    """Read everything; over the window, answer per window and let the LLM merge.

    ``window_tokens`` defaults to the paper's 120k tokens, or less when the configured
    model's context cannot hold that with the prompt and the answer; the stride to half the
    window (the paper's 120k/60k).
    """
    fits = client.config.context_tokens - client.config.max_tokens - PROMPT_MARGIN_TOKENS
    window = window_tokens or max(256, min(PAPER_WINDOW_TOKENS, fits))
    stride = stride_tokens or max(1, window // 2)
    texts = text_windows(documents, window, stride, client.count_tokens)
    if not texts:
        raise ValueError("the documents hold no text to answer from")
    requests = [
        ANSWER_WINDOW.messages(part=str(i), parts=str(len(texts)), text=text, question=question)
        for i, text in enumerate(texts, start=1)
    ]
    answers = [c.text.strip() for c in client.chat_many(requests, desc="windows")]
    if len(answers) == 1:
        return Answer(answers[0], mode="full-context")
    found = [a for a in answers if a and NOT_FOUND not in a.upper()]
    if not found:
        return Answer(NOT_FOUND, mode="full-context", windows=len(answers))
    listed = "\n".join(f"- {a}" for a in found)
    budget = client.config.context_tokens - client.config.max_tokens - PROMPT_MARGIN_TOKENS
    while client.count_tokens(listed) > budget and "\n" in listed:  # keep the merge inside
        listed = listed.rsplit("\n", 1)[0]
    merged = client.chat(MERGE_WINDOW_ANSWERS.messages(question=question, answers=listed))
    return Answer(merged.text.strip(), mode="full-context", windows=len(answers))
