"""Documents, evidence, and readers for files and directories.

Everything downstream points back into ``Document.text`` by character offsets, so a piece of
evidence can always be cited and highlighted in the user's original text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
import weakref
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

# The core type imports no other longscan module: ``longscan.segment`` (below it, importing
# nothing of longscan either) loads when a document is first segmented, and these mirror its
# defaults (a test holds them equal).
DEFAULT_SEGMENTER = "blingfire"
DEFAULT_MAX_CHARS = 1_000
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone halves of UTF-16 pairs: no UTF-8 text

logger = logging.getLogger(__name__)
T = TypeVar("T")


def lone_surrogate(text: str) -> str | None:
    """Where ``text`` holds a lone surrogate (U+D800..U+DFFF), which no encoder, tokenizer
    or hash accepts as UTF-8, described for an error message; None when it holds none."""
    found = None if text.isascii() else _SURROGATE.search(text)
    return None if found is None else f"U+{ord(found.group()):04X} at offset {found.start()}"


class DocumentError(ValueError):
    """An input that cannot become a Document; the message names the file and the cause."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where a stretch of an extracted text came from: from ``start`` on (until the next
    place), the text lies on ``page`` (1-based, PDF) under the headings ``section`` (outermost
    first: HTML, DOCX and Markdown headings)."""

    start: int
    page: int | None = None
    section: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How a citation names the place: "p. 47", "Item 7 › Liquidity", or both."""
        parts = [f"p. {self.page}"] if self.page is not None else []
        if self.section:
            parts.append(" › ".join(self.section))
        return " · ".join(parts)


def places_to_json(places: Sequence[Place]) -> str:
    """``places`` as compact JSON (``[[start, page, [heading, ...]], ...]``), as caches and
    the memory bank store them."""
    return json.dumps([[p.start, p.page, list(p.section)] for p in places], ensure_ascii=False)


def places_from_json(text: str) -> tuple[Place, ...]:
    """The places ``places_to_json`` wrote.

    Raises:
        ValueError: text that is not such a list.
    """
    try:
        return tuple(Place(int(s), None if p is None else int(p), tuple(h)) for s, p, h in
                     json.loads(text))  # fmt: skip
    except (TypeError, ValueError) as error:
        raise ValueError(f"not a list of places ({error})") from None


@dataclass(eq=False)
class Document:
    """A text with a stable id, split lazily into paragraphs and sentences with offsets.

    Attributes:
        id: Stable identifier (a relative path, a dataset id, ...), unique in a collection.
        text: The text; never modified here, so every offset indexes it exactly. Offsets
            count code points (Python's ``str`` indices). ``read_file`` gives the file's
            decoded characters without the byte-order mark, which belongs to the
            encoding, not to the text (as Python's ``utf-8-sig`` and ``utf-16`` codecs
            read it).
        metadata: Free-form facts (source path, title, decoding errors, ...).
        places: Pages and heading paths of an extracted text (``longscan.readers``), by
            ascending ``start``; empty for plain text.
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    segmenter: str = DEFAULT_SEGMENTER
    max_sentence_chars: int = DEFAULT_MAX_CHARS
    places: tuple[Place, ...] = ()

    def place(self, offset: int) -> Place | None:
        """The place holding character ``offset`` (None: plain text, or before the first)."""
        index = bisect_right(self._place_starts, offset) - 1
        return self.places[index] if index >= 0 else None

    @cached_property
    def _place_starts(self) -> list[int]:
        return [place.start for place in self.places]

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 of the text: the key of every per-document cache."""
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    @cached_property
    def lone_surrogate(self) -> str | None:
        """``lone_surrogate(text)``, looked for once: every question checks its documents."""
        return lone_surrogate(self.text)

    @cached_property
    def _segmentation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from longscan.segment import segment

        return segment(self.text, self.segmenter, self.max_sentence_chars)

    @property
    def sentences(self) -> np.ndarray:
        """Sentence spans, ``(n, 2)`` int64 ``[start, end)`` offsets into ``text``."""
        return self._segmentation[0]

    @property
    def paragraphs(self) -> np.ndarray:
        """Paragraph spans, ``(p, 2)`` int64."""
        return self._segmentation[1]

    @property
    def sentence_paragraph(self) -> np.ndarray:
        """Paragraph index of every sentence, ``(n,)`` int64."""
        return self._segmentation[2]

    def chunks(self, words_per_chunk: int = 300) -> np.ndarray:
        """Fixed word-count chunks, ``(m, 2)`` int64 spans."""
        from longscan.segment import word_chunks

        return word_chunks(self.text, self.sentences, words_per_chunk)

    def sentence_texts(self) -> list[str]:
        return [self.text[start:end] for start, end in self.sentences.tolist()]

    def __len__(self) -> int:
        return len(self.text)

    def __repr__(self) -> str:
        return f"Document(id={self.id!r}, chars={len(self.text)})"


class SentencePositions:
    """Positions in the sentences of ``documents`` read one after another (how the scanner
    and the re-scorer number them), mapped back to their document and sentence."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = documents
        self.starts = np.cumsum([0, *(len(d.sentences) for d in documents)])

    def locate(self, position: int) -> tuple[Document, int]:
        """The document holding sentence ``position`` and the sentence's index in it."""
        owner = int(np.searchsorted(self.starts, position, side="right")) - 1
        return self.documents[owner], position - int(self.starts[owner])

    def text(self, position: int) -> str:
        document, local = self.locate(position)
        start, end = (int(v) for v in document.sentences[local])
        return document.text[start:end]

    def texts(self, positions: np.ndarray) -> list[str]:
        return [self.text(int(p)) for p in positions.tolist()]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One ranked unit of evidence: ``document.text[start:end] == text``.

    Attributes:
        doc_id: Id of the document the unit comes from.
        start: First character, inclusive.
        end: Last character, exclusive.
        text: The unit's text, exactly as in the document.
        score: Retriever score; higher is more relevant. Comparable within one ranking only.
        unit: Index of the unit (sentence or chunk) in its document, or -1.
        page: The PDF page the unit starts on (1-based), if known.
        section: The headings above the unit, outermost first, if known.
        context: For a table row, the units that say what its figures are (its table's
            title, column header and row group) as ``(start, end, text)``, each exactly the
            document's ``text[start:end]``; empty for any other unit or until
            ``selection.cite_table_context`` fills it.
        found: For a span widened around the units a retriever ranked (their paragraph,
            their neighbours), those units' ``(start, end)``, best first, each inside the
            span: what the reader was pointed at within what it was shown. Empty when the
            span is the unit itself.
    """

    doc_id: str
    start: int
    end: int
    text: str
    score: float
    unit: int = -1
    page: int | None = None
    section: tuple[str, ...] = ()
    context: tuple[tuple[int, int, str], ...] = ()
    found: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, document: Document, start: int, end: int, score: float, unit: int) -> Evidence:
        """The unit ``[start, end)`` of ``document``, with its text and the place it starts."""
        place = document.place(start)
        return cls(
            document.id,
            start,
            end,
            document.text[start:end],
            score,
            unit,
            page=None if place is None else place.page,
            section=() if place is None else place.section,
        )

    @property
    def where(self) -> str:
        """The citation's place ("p. 47 · Item 7 › Liquidity"), or "" when none is known."""
        return Place(self.start, self.page, self.section).label

    def to_json(self) -> dict[str, Any]:
        """The evidence as JSON, in the one schema that the CLI, the bank and the service all
        print (``EVIDENCE_JSON_SCHEMA``).

        Raises:
            ValueError: a field of the wrong type (``unit`` must be an index), or a score
                that is not a finite number (NaN or infinity is not JSON, and a ranking by
                it means nothing: it is a defect to report, never a value to print).
        """
        if not isinstance(self.unit, int | np.integer) or isinstance(self.unit, bool):
            raise ValueError(f"Evidence.unit is the unit's index, not {self.unit!r}")
        if not math.isfinite(self.score):
            raise ValueError(
                f"the evidence at {self.doc_id}:{self.start}-{self.end} has score "
                f"{self.score}, not a finite number; the scores cannot be trusted"
            )
        return {
            "doc_id": str(self.doc_id),
            "start": int(self.start),
            "end": int(self.end),
            "score": float(self.score),
            "unit": int(self.unit),
            "page": None if self.page is None else int(self.page),
            "section": [str(heading) for heading in self.section],
            "text": self.text,
            "context": [
                {"start": int(start), "end": int(end), "text": text}
                for start, end, text in self.context
            ],
            "found": [{"start": int(start), "end": int(end)} for start, end in self.found],
        }


def _spans(description: str, *texts: str) -> dict[str, Any]:
    """The schema of a list of spans ``{"start", "end"}`` of the document's text, each with
    the string fields ``texts`` too."""
    offset = {"type": "integer", "minimum": 0}
    properties = {"start": offset, "end": offset, **{name: {"type": "string"} for name in texts}}
    return {
        "type": "array",
        "description": description,
        "items": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    }


EVIDENCE_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Evidence",
    "description": "One ranked unit of evidence; `text` is exactly the document's "
    "text[start:end]. `longscan ask --json`, `longscan bank search --json` and the service's "
    "API all give evidence in this form (Evidence.to_json).",
    "type": "object",
    "properties": {
        "doc_id": {
            "type": "string",
            "description": "The document's id: a file as it was named, a file's path "
            "relative to the folder given, or a bank (or service) document's integer id as "
            "text.",
        },
        "start": {
            "type": "integer",
            "minimum": 0,
            "description": "First character, inclusive, counted in code points of the "
            "document's text (without a byte-order mark).",
        },
        "end": {"type": "integer", "minimum": 0, "description": "Last character, exclusive."},
        "score": {
            "type": "number",
            "description": "The retriever's score; higher is more relevant; comparable within "
            "one ranking only.",
        },
        "unit": {
            "type": "integer",
            "minimum": -1,
            "description": "Index of the unit (sentence or chunk) in its document, or -1.",
        },
        "page": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "The PDF page the unit starts on, counted from 1; null for other "
            "formats.",
        },
        "section": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The headings above the unit, outermost first (HTML, DOCX and "
            "Markdown headings); empty when the text has none.",
        },
        "text": {"type": "string", "description": "The unit's text, exactly as in the document."},
        "context": _spans(
            "For a table row: the lines that say what its figures are (the table's title, "
            "column header and row group), in document order, each with its own offsets, to be "
            "highlighted with the row. Empty for any other unit.",
            "text",
        ),
        "found": _spans(
            "For a span widened around the units the retriever ranked (their paragraph, or "
            "their neighbours): those units' offsets, best first, each inside [start, end), to "
            "be marked apart within the span. Empty when the span is the unit itself."
        ),
    },
    "required": [
        "doc_id",
        "start",
        "end",
        "score",
        "unit",
        "page",
        "section",
        "text",
        "context",
        "found",
    ],
    "additionalProperties": False,
}


def check_unique_ids(documents: Sequence[Document]) -> None:
    """Collections need unique ids, or evidence could not be traced back."""
    seen: set[str] = set()
    for document in documents:
        if document.id in seen:
            raise DocumentError(f"duplicate document id {document.id!r} in the collection")
        seen.add(document.id)


def per_document(compute: Callable[[Document], T]) -> Callable[[Document], T]:
    """``compute(document)`` worked out once per document and kept while the document lives:
    what the layers above read of a document's structure (its tables' row context, its
    headings) without the document knowing those layers."""
    results: weakref.WeakKeyDictionary[Document, T] = weakref.WeakKeyDictionary()

    @functools.wraps(compute)
    def memo(document: Document) -> T:
        if document not in results:
            results[document] = compute(document)
        return results[document]

    return memo
