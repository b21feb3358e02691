"""Selection: turn a ranking into the evidence handed to a reader or an LLM.

Top-k or a word budget, in score or document order, optionally widened to neighbouring
sentences or the whole paragraph (merging hits that then overlap), always with exact offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from longscan.documents import Document, Evidence
from longscan.tables import is_row, row_context, sentence_of

Order = Literal["score", "document"]
BUDGET_WORDS = 300
"""Evidence words an answer is read from unless told otherwise, the budget the answers in
BENCHMARKS.md were measured at (about 600 prompt tokens for the local model)."""


def check_widening(neighbours: int, paragraph: bool, widened: int | None) -> None:
    """Refuse a ``widened`` count with nothing to widen by: it would silently do nothing.

    Raises:
        ValueError: ``widened`` negative, or given without ``neighbours`` or ``paragraph``.
    """
    if widened is None:
        return
    if widened < 0:
        raise ValueError("widened must be >= 0")
    if not (neighbours or paragraph):
        raise ValueError("widened needs paragraph (or neighbours): there is nothing to widen")


def select(
    evidence: Sequence[Evidence],
    documents: Sequence[Document],
    *,
    top_k: int | None = None,
    budget_words: int | None = None,
    neighbours: int = 0,
    paragraph: bool = False,
    widened: int | None = None,
    order: Order = "score",
) -> list[Evidence]:
    """Select evidence from a ranking (best first).

    Args:
        evidence: Ranked units, best first.
        documents: The documents the units come from (for expansion and text).
        top_k: Keep at most this many hits (before expansion).
        budget_words: Keep hits while their words fit this budget (after expansion).
        neighbours: Widen each hit by this many sentences on each side (same paragraph).
        paragraph: Widen each hit to its whole paragraph.
        widened: Widen only the best this many hits (None: every one); the others are read
            alone, so a budget holds the best hit's context and still many distinct hits.
        order: ``"score"`` (best first) or ``"document"`` (reading order, by document as
            given, then offset), the order the paper feeds its generator.
    """
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be positive")
    if budget_words is not None and budget_words < 1:
        raise ValueError("budget_words must be positive")
    if neighbours < 0:
        raise ValueError("neighbours must be >= 0")
    check_widening(neighbours, paragraph, widened)
    if order not in ("score", "document"):
        raise ValueError("order must be 'score' or 'document'")
    by_id = {document.id: document for document in documents}
    for hit in evidence:
        if hit.doc_id not in by_id:
            raise ValueError(f"evidence from document {hit.doc_id!r}, which was not given")
        if not 0 <= hit.start <= hit.end <= len(by_id[hit.doc_id].text):
            raise ValueError(
                f"evidence [{hit.start}, {hit.end}) is outside document {hit.doc_id!r} "
                f"({len(by_id[hit.doc_id].text):,} characters)"
            )
    chosen: list[Evidence] = []

    def fits(spans: list[Evidence]) -> bool:
        return budget_words is None or sum(len(e.text.split()) for e in spans) <= budget_words

    for rank, hit in enumerate(evidence[:top_k] if top_k is not None else evidence):
        document = by_id[hit.doc_id]
        wide = widened is None or rank < widened
        merged = _merge_into(
            chosen, _widen(hit, document, neighbours if wide else 0, paragraph and wide), document
        )
        if not fits(merged):  # widened, it does not fit: the unit alone may
            merged = _merge_into(chosen, hit, document)
        if not fits(merged):
            break
        chosen = merged
    if order == "document":
        rank = {document.id: i for i, document in enumerate(documents)}
        chosen.sort(key=lambda e: (rank[e.doc_id], e.start))
    return chosen


def _widen(hit: Evidence, document: Document, neighbours: int, paragraph: bool) -> Evidence:
    if not paragraph and neighbours == 0:
        return hit
    sentences = document.sentences
    owner = document.sentence_paragraph
    if len(sentences) == 0:  # only white space: nothing to widen to
        return hit
    index = int(np.searchsorted(sentences[:, 0], hit.start, side="right")) - 1
    index = max(index, 0)
    if paragraph:
        start, end = (int(v) for v in document.paragraphs[owner[index]])
    else:
        same = np.flatnonzero(owner == owner[index])
        first = max(index - neighbours, int(same[0]))
        last = min(index + neighbours, int(same[-1]))
        start, end = int(sentences[first, 0]), int(sentences[last, 1])
    start, end = min(start, hit.start), max(end, hit.end)
    found = () if (start, end) == (hit.start, hit.end) else _pointed(hit)
    return replace(Evidence.of(document, start, end, hit.score, hit.unit), found=found)


def _pointed(span: Evidence) -> tuple[tuple[int, int], ...]:
    """The ranked units inside ``span``, best first: its own offsets unless it was widened."""
    return span.found or ((span.start, span.end),)


def _merge_into(chosen: list[Evidence], new: Evidence, document: Document) -> list[Evidence]:
    """Add ``new``, merging it with any chosen span of the same document it overlaps; the
    merged span keeps the rank and unit of the best span in it (``chosen`` is best first), and
    the units ranked inside each part as ``found``, best first."""
    kept, start, end, score, unit = [], new.start, new.end, new.score, new.unit
    at: int | None = None
    pointed: list[tuple[int, int]] = []
    for old in chosen:
        if old.doc_id == new.doc_id and old.start < end and start < old.end:
            start, end, score = min(start, old.start), max(end, old.end), max(score, old.score)
            pointed += _pointed(old)
            if at is None:
                at, unit = len(kept), old.unit
        else:
            kept.append(old)
    found = tuple(dict.fromkeys([*pointed, *_pointed(new)]))
    found = () if found == ((start, end),) else found
    merged = replace(Evidence.of(document, start, end, score, unit), found=found)
    at = len(kept) if at is None else at
    return [*kept[:at], merged, *kept[at:]]


def with_table_context(
    evidence: Sequence[Evidence], documents: Sequence[Document]
) -> list[Evidence]:
    """The ranking with each table row's context units (its table's title block, column
    header and row group, ``tables.row_context``) placed right before the row at the row's
    score, every unit once. A row of figures cited alone cannot be read or checked; its
    context is evidence like any other, with exact offsets, and costs words in a budget.
    Chunks and units that are not table rows pass unchanged."""
    by_id = {document.id: document for document in documents}
    given: set[tuple[str, int]] = set()
    ranked: list[Evidence] = []
    for hit in evidence:
        document = by_id[hit.doc_id]
        sentence = sentence_of(document, hit)
        if sentence is None:
            ranked.append(hit)
            continue
        if (hit.doc_id, sentence) in given:  # already placed as a row's context
            continue
        for unit in row_context(document).get(sentence, ()):
            if (hit.doc_id, unit) not in given:
                given.add((hit.doc_id, unit))
                start, end = (int(v) for v in document.sentences[unit])
                ranked.append(Evidence.of(document, start, end, hit.score, unit))
        given.add((hit.doc_id, sentence))
        ranked.append(hit)
    return ranked


def cite_table_context(
    evidence: Sequence[Evidence], documents: Sequence[Document]
) -> list[Evidence]:
    """The evidence with each table row's ``context`` filled: the spans of its title, column
    header and row group, so that a page or a citation shows what the row's figures are,
    with exact offsets. The ranking is unchanged, and a document's rows are only looked up
    when a row is among the evidence."""
    by_id = {document.id: document for document in documents}
    return [
        _row_with_context(hit, by_id[hit.doc_id])
        if hit.doc_id in by_id and is_row(hit.text)
        else hit
        for hit in evidence
    ]


def _row_with_context(hit: Evidence, document: Document) -> Evidence:
    sentence = sentence_of(document, hit)
    if sentence is None:  # a chunk that starts on a row
        return hit
    spans = (document.sentences[unit].tolist() for unit in row_context(document).get(sentence, ()))
    context = tuple((start, end, document.text[start:end]) for start, end in spans)
    return replace(hit, context=context)
