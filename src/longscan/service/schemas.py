"""The request and response bodies of the HTTP API, as its OpenAPI schema shows them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from longscan.retrievers.base import MAX_QUERY_CHARS
from longscan.service.limits import MAX_NAME_BYTES

MAX_DOCUMENTS_PER_QUESTION = 50
SQLITE_MAX_INTEGER = 2**63 - 1
DocId = Annotated[int, Field(ge=1, le=SQLITE_MAX_INTEGER, description="A bank id.")]


class DocumentOut(BaseModel):
    id: int
    key: str = Field(description="The upload's file name; uploading it again updates it.")
    chars: int
    tokens: int


class UploadOut(DocumentOut):
    status: Literal["added", "updated", "unchanged"]
    decoding_errors: int = Field(description="Byte runs that were not UTF-8 (now U+FFFD).")


class DocumentText(DocumentOut):
    text: str


class PasteIn(BaseModel):
    name: str = Field(min_length=1, max_length=MAX_NAME_BYTES, description="A file name.")
    text: str = Field(min_length=1)


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    doc_ids: list[DocId] = Field(min_length=1, max_length=MAX_DOCUMENTS_PER_QUESTION)
    top_k: int | None = Field(default=None, ge=1, le=200)


class SpanOut(BaseModel):
    start: int
    end: int


class ContextSpanOut(SpanOut):
    text: str


class EvidenceOut(BaseModel):
    doc_id: str = Field(description="The bank id of the document, as text.")
    start: int = Field(
        description="First character, inclusive, in the document's text, counted in Unicode "
        "code points (Python's str; JavaScript's UTF-16 indices differ after any character "
        "outside the Basic Multilingual Plane)."
    )
    end: int = Field(description="Last character, exclusive, in code points.")
    score: float
    unit: int = Field(description="Index of the sentence in its document.")
    page: int | None = Field(description="The PDF page the unit starts on, from 1; else null.")
    section: list[str] = Field(description="The headings above the unit, outermost first.")
    text: str
    context: list[ContextSpanOut] = Field(
        description="For a table row: its table's title, column header and row group, each "
        "with its offsets; empty for any other unit."
    )
    found: list[SpanOut] = Field(
        description="For a span widened around the sentences the retriever ranked (their "
        "paragraph): those sentences' offsets, best first; empty when the span is the "
        "sentence itself."
    )


class AnswerOut(BaseModel):
    text: str = Field(description="The answer; [n] cites evidence n of `evidence` below.")
    evidence: list[EvidenceOut] = Field(
        description="What the answerer was shown, in document order, numbered from 1."
    )
    citations: list[EvidenceOut]
    span: EvidenceOut | None = Field(
        description="An extractive answer's exact offsets, inside one cited item; else null."
    )
    warnings: list[str] = Field(
        description="What the evidence given does not back: a cited number that names no "
        "evidence, no citation, a figure or most of the answer's words in no cited evidence."
    )
    model: str = Field(description="The model or reader that answered.")
    tokens: dict[str, int] = Field(
        description="The answerer's prompt and completion tokens, when it counts them."
    )


class AskOut(BaseModel):
    question: str
    abstained: bool = Field(
        description="True when the re-scorer judges none of the best evidence an answer "
        "(below its calibrated threshold): the evidence below is only the closest, and no "
        "answerer was asked."
    )
    evidence: list[EvidenceOut] = Field(description="Best first.")
    answer: AnswerOut | None
    llm_error: str | None
    seconds: float
    timings: dict[str, float] = Field(
        description="Seconds per step: prepare (encoding new documents), retrieve, judge "
        "(abstention), answer."
    )


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    documents: int
    queued: int = Field(description="Jobs waiting for the worker.")
    running: int = Field(description="Jobs the worker is running (0 or 1).")
    abandoned: int = Field(
        description="Of those queued or running, jobs whose client already gave up (504 or a "
        "closed connection); a running one stops at its next checkpoint, except a "
        "document's encoding after a 504, which finishes so that asking again finds it."
    )
    reading: int = Field(description="Uploads being read beside the worker, or waiting to be.")
    llm: str | None = Field(description="The model or reader that answers; null: none does.")


class SearchIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int = Field(default=10, ge=1, le=100, description="Documents to return.")
    method: Literal["bm25", "dense", "hybrid"] = Field(
        default="hybrid", description="The first stage over the whole bank."
    )
    two_stage: bool = Field(
        default=True,
        description="Let the scanner read the first stage's best documents, rank them again "
        "and cite their best sentences; false returns the first stage's ranking alone.",
    )
    depth: int = Field(default=50, ge=1, le=200, description="Documents the scanner reads.")


class SearchHitOut(BaseModel):
    doc_id: str = Field(description="The bank id of the document, as text.")
    key: str
    score: float
    evidence: list[EvidenceOut] = Field(
        description="Two-stage only: the document's best sentences, best first."
    )


class SearchOut(BaseModel):
    question: str
    hits: list[SearchHitOut] = Field(description="Best first.")
    seconds: float
