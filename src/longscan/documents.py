"""Documents, evidence, and readers for files and directories.

Everything downstream points back into ``Document.text`` by character offsets, so a piece of
evidence can always be cited and highlighted in the user's original text.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from longscan.segment import DEFAULT_MAX_CHARS, DEFAULT_SEGMENTER, segment, word_chunks

logger = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text", ".rst")
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: larger inputs belong in a memory bank, not one Document
_BINARY_SNIFF_BYTES = 8192


class DocumentError(ValueError):
    """An input that cannot become a Document; the message names the file and the cause."""


@dataclass(eq=False)
class Document:
    """A text with a stable id, split lazily into paragraphs and sentences with offsets.

    Attributes:
        id: Stable identifier (a relative path, a dataset id, ...), unique in a collection.
        text: The original text; never modified.
        metadata: Free-form facts (source path, title, decoding errors, ...).
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    segmenter: str = DEFAULT_SEGMENTER
    max_sentence_chars: int = DEFAULT_MAX_CHARS

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 of the text: the key of every per-document cache."""
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    @cached_property
    def _segmentation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        return word_chunks(self.text, self.sentences, words_per_chunk)

    def sentence_texts(self) -> list[str]:
        return [self.text[start:end] for start, end in self.sentences.tolist()]

    def __len__(self) -> int:
        return len(self.text)

    def __repr__(self) -> str:
        return f"Document(id={self.id!r}, chars={len(self.text)})"


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
    """

    doc_id: str
    start: int
    end: int
    text: str
    score: float
    unit: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "unit": self.unit,
            "text": self.text,
        }


def check_unique_ids(documents: Sequence[Document]) -> None:
    """Collections need unique ids, or evidence could not be traced back."""
    seen: set[str] = set()
    for document in documents:
        if document.id in seen:
            raise DocumentError(f"duplicate document id {document.id!r} in the collection")
        seen.add(document.id)


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def read_file(
    path: str | Path, doc_id: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Document:
    """Read one text file.

    Non-UTF-8 bytes are decoded with U+FFFD replacement, never dropped silently: the count is
    kept in ``metadata["decoding_errors"]`` and a warning names the file.

    Raises:
        DocumentError: missing, unreadable, binary, empty or over ``max_bytes``.
    """
    path = Path(path)
    if not path.exists():
        raise DocumentError(f"{path}: no such file or directory")
    if not path.is_file():
        raise DocumentError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise DocumentError(
            f"{path}: {size:,} bytes is over the {max_bytes:,}-byte limit for one document; "
            "split it or add it to a memory bank"
        )
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DocumentError(f"{path}: cannot read ({error.strerror})") from error
    if _looks_binary(raw[:_BINARY_SNIFF_BYTES]):
        raise DocumentError(f"{path}: looks like a binary file (NUL bytes), not text")
    try:
        text = raw.decode("utf-8")
        errors = 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        errors = text.count("\ufffd") - raw.decode("utf-8", "ignore").count("\ufffd")
        logger.warning("%s: not valid UTF-8; %d byte run(s) replaced by U+FFFD", path, errors)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DocumentError(f"{path}: the file holds no text")
    metadata = {"path": str(path), "decoding_errors": errors}
    return Document(id=doc_id or path.name, text=text, metadata=metadata)


def read_paths(paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES) -> list[Document]:
    """Read files and directories (recursively, text suffixes only) into a collection.

    Ids are paths relative to the directory given, so they stay stable across machines.
    Binary or empty files inside a directory are skipped with a warning; given by name,
    they are an error.

    Raises:
        DocumentError: a missing path, a duplicate id, or no readable text at all.
    """
    return list(iter_paths(paths, max_bytes))


def iter_paths(
    paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[Document]:
    """``read_paths`` one document at a time, so a corpus larger than memory can stream.

    Every given path is checked before the first document is read.
    """
    given = list(paths)
    for root in map(Path, given):
        if not root.exists():
            raise DocumentError(f"{root}: no such file or directory")
    seen: set[str] = set()
    for name in given:
        for document in _documents_under(name, max_bytes):
            if document.id in seen:
                raise DocumentError(f"duplicate document id {document.id!r} in the collection")
            seen.add(document.id)
            yield document
    if not seen:
        raise DocumentError("no readable text documents in " + ", ".join(map(str, given)))


def _documents_under(given: str | Path, max_bytes: int) -> Iterator[Document]:
    root = Path(given)
    if root.is_file():
        yield read_file(root, doc_id=str(given), max_bytes=max_bytes)
        return
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix.lower() not in TEXT_SUFFIXES:
            logger.warning("%s: skipped (not a %s file)", path, "/".join(TEXT_SUFFIXES))
            continue
        try:
            yield read_file(path, doc_id=str(path.relative_to(root)), max_bytes=max_bytes)
        except DocumentError as error:
            logger.warning("skipped: %s", error)
