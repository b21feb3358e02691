"""Paragraphs and sentences with exact character offsets into the original text.

Segmentation never rewrites text: every unit is a ``(start, end)`` pair such that
``text[start:end]`` is the unit, stripped of surrounding white space. Sentences never cross
paragraph boundaries, and no unit is longer than ``max_chars`` (a 1 MB run without
punctuation is cut at white space, or hard-cut when there is none), so every later stage sees
bounded units.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache

import numpy as np

# A blank line (possibly holding spaces or tabs) separates paragraphs.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")
_NON_SPACE = re.compile(r"\S")
_WORD = re.compile(r"\S+")
SURROGATES = re.compile("[\ud800-\udfff]")  # lone halves of UTF-16 pairs: no UTF-8 text
_LEADING_SPACE = re.compile(r"\s*")
_INFORMATION_SEPARATOR = re.compile("[\x1c-\x1f]")
_PYSBD_WINDOW = 5_000  # characters pysbd reads at once (see _pysbd_spans)

DEFAULT_MAX_CHARS = 1_000
SEGMENTERS = ("blingfire", "pysbd", "syntok")
DEFAULT_SEGMENTER = "blingfire"

SpanFinder = Callable[[str], list[tuple[int, int]]]


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so it neither starts nor ends with white space."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Split at blank lines; each paragraph is stripped and non-empty."""
    spans: list[tuple[int, int]] = []
    position = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        spans.append(_strip_span(text, position, match.start()))
        position = match.end()
    spans.append(_strip_span(text, position, len(text)))
    return [(start, end) for start, end in spans if end > start]


def _split_long(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """Cut an over-long unit at the last white space before ``max_chars`` (hard cut if none)."""
    while end - start > max_chars:
        cut = text.rfind(" ", start + max_chars // 2, start + max_chars)
        if cut <= start:
            cut = start + max_chars
        piece = _strip_span(text, start, cut)
        if piece[1] > piece[0]:
            yield piece
        start, end = _strip_span(text, cut, end)
    if end > start:
        yield start, end


def _blingfire_spans(text: str) -> list[tuple[int, int]]:
    """blingfire's sentences as character spans.

    The library's C function gives UTF-8 byte offsets. Its Python wrapper
    (``text_to_sentences_and_offsets``) maps them to characters in a Python loop over every
    byte; the same mapping is done here with numpy (a character's index is the number of
    lead bytes before it), which made ``segment`` 1.55x faster (docs/experiments.md).
    """
    import ctypes

    import blingfire

    data = text.encode("utf-8")
    if not data:
        return []
    capacity = 2 * len(data)  # the wrapper's buffer sizes
    joined = ctypes.create_string_buffer(capacity)
    starts = (ctypes.c_int32 * capacity)()
    ends = (ctypes.c_int32 * capacity)()
    written = blingfire.blingfire.TextToSentencesWithOffsets(
        ctypes.c_char_p(data), ctypes.c_int(len(data)), ctypes.byref(joined),
        ctypes.byref(starts), ctypes.byref(ends), ctypes.c_int(capacity),
    )  # fmt: skip
    if written == -1 or written > capacity:
        return []
    count = joined.value.count(b"\n") + 1  # the sentences come back one per line
    first = np.frombuffer(starts, dtype=np.int32, count=count).astype(np.int64)
    last = np.frombuffer(ends, dtype=np.int32, count=count).astype(np.int64)  # inclusive
    if len(data) == len(text):  # ASCII: a byte is a character
        return list(zip(first.tolist(), (last + 1).tolist(), strict=True))
    lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
    characters_before = np.concatenate(([0], np.cumsum(lead)))
    stops = characters_before[last + 1]
    if last[-1] + 1 < len(data) and not lead[last[-1] + 1]:
        stops[-1] = len(text)  # an end inside a character: the wrapper ends the text there
    return list(zip(characters_before[first].tolist(), stops.tolist(), strict=True))


def _windows(text: str, size: int) -> Iterator[tuple[int, str]]:
    """``(offset, piece)`` of at most ``size`` characters, cut after a line break, else a
    sentence end, else a space (hard cut if none lies in the piece's second half)."""
    start = 0
    while len(text) - start > size:
        cut = start + size
        for separator in ("\n", ". ", " "):
            found = text.rfind(separator, start + size // 2, start + size)
            if found > start:
                cut = found + len(separator)
                break
        yield start, text[start:cut]
        start = cut
    yield start, text[start:]


def _pysbd_spans(text: str) -> list[tuple[int, int]]:
    """pysbd's sentences, aligned to ``text`` in one left-to-right pass.

    Two of pysbd's own steps are quadratic in their input, so neither sees a long one:
    its ``char_span`` alignment searches the whole text again for every sentence (16,000
    one-word lines took 13 s, 600,000 characters of them never finished), and its
    abbreviation pass rewrites the whole text once per abbreviation (100 KB of "Mr. " took
    148 s). pysbd reads pieces of at most ``_PYSBD_WINDOW`` characters, cut at a line break
    or sentence end where there is one, and each sentence is looked for just after the
    previous one (pysbd only drops white space between sentences). A sentence that cannot
    be found there is left out, and ``sentence_spans_in`` makes a unit of the text it would
    have covered.
    """
    # pysbd reads a list number after any white space and calls int() on it with that space,
    # which int() refuses for U+001C..U+001F: "a\x1f5. b" raised ValueError. A space in
    # their place keeps every offset (one code point for one).
    text = _INFORMATION_SEPARATOR.sub(" ", text)
    spans: list[tuple[int, int]] = []
    for offset, piece in _windows(text, _PYSBD_WINDOW):
        if not piece.strip():
            continue
        cursor = 0
        for sentence in _pysbd_segmenter().processor(piece).process():
            sentence = sentence.strip()
            if not sentence:
                continue
            start = _LEADING_SPACE.match(piece, cursor).end()
            if not piece.startswith(sentence, start):
                # A bounded look-ahead keeps the pass linear when pysbd rewrote a sentence.
                start = piece.find(sentence, cursor, start + 2 * len(sentence) + 64)
                if start < 0:
                    continue
            cursor = start + len(sentence)
            spans.append((offset + start, offset + cursor))
    return spans


@cache
def _pysbd_segmenter():  # noqa: ANN202 - optional dependency type
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def _syntok_spans(text: str) -> list[tuple[int, int]]:
    import syntok.segmenter as syntok_segmenter

    spans = []
    for paragraph in syntok_segmenter.analyze(text):
        for sentence in paragraph:
            tokens = list(sentence)
            if tokens:
                spans.append((tokens[0].offset, tokens[-1].offset + len(tokens[-1].value)))
    return spans


_FINDERS: dict[str, SpanFinder] = {
    "blingfire": _blingfire_spans,
    "pysbd": _pysbd_spans,
    "syntok": _syntok_spans,
}


def sentence_spans_in(
    text: str,
    start: int,
    end: int,
    segmenter: str = DEFAULT_SEGMENTER,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as absolute, stripped, bounded, ordered spans.

    The backend's offsets are trusted only after clamping and stripping, and any gap the
    backend skipped that still holds text becomes a unit of its own, so no character of the
    paragraph is lost.
    """
    if segmenter not in _FINDERS:
        raise ValueError(f"unknown segmenter {segmenter!r}; choose one of {SEGMENTERS}")
    if max_chars < 2:
        raise ValueError("max_chars must be at least 2")
    piece = text[start:end]
    # Lone surrogates (a str may hold them; no UTF-8 encoder accepts them) become U+FFFD for
    # the backend: one code point for one, so its offsets still index ``text``.
    raw = sorted(_FINDERS[segmenter](SURROGATES.sub("\ufffd", piece)))
    spans: list[tuple[int, int]] = []
    cursor = 0
    for raw_start, raw_end in raw:
        raw_start, raw_end = max(raw_start, cursor), min(raw_end, len(piece))
        if raw_end <= raw_start:
            continue
        if _NON_SPACE.search(piece, cursor, raw_start):  # text the backend skipped
            spans.append((cursor, raw_start))
        spans.append((raw_start, raw_end))
        cursor = raw_end
    if _NON_SPACE.search(piece, cursor):
        spans.append((cursor, len(piece)))
    result: list[tuple[int, int]] = []
    for local_start, local_end in spans:
        unit_start, unit_end = _strip_span(text, start + local_start, start + local_end)
        result.extend(_split_long(text, unit_start, unit_end, max_chars))
    return result


def segment(
    text: str, segmenter: str = DEFAULT_SEGMENTER, max_chars: int = DEFAULT_MAX_CHARS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segment a whole text.

    Returns:
        ``(sentences, paragraphs, sentence_paragraph)``: sentence spans ``(n, 2)`` int64,
        paragraph spans ``(p, 2)`` int64, and the paragraph index of every sentence ``(n,)``.
    """
    paragraphs = paragraph_spans(text)
    sentences: list[tuple[int, int]] = []
    owner: list[int] = []
    for index, (start, end) in enumerate(paragraphs):
        found = sentence_spans_in(text, start, end, segmenter, max_chars)
        sentences.extend(found)
        owner.extend([index] * len(found))
    return (
        np.asarray(sentences, dtype=np.int64).reshape(-1, 2),
        np.asarray(paragraphs, dtype=np.int64).reshape(-1, 2),
        np.asarray(owner, dtype=np.int64),
    )


def word_chunks(text: str, sentences: np.ndarray, words_per_chunk: int = 300) -> np.ndarray:
    """Fixed-size word chunks (the seeds' 300-word setting) as ``(m, 2)`` character spans.

    Chunks are cut at word boundaries, ignore sentence boundaries (as fixed-size chunking
    does), and cover every word of every sentence exactly once.
    """
    if words_per_chunk < 1:
        raise ValueError("words_per_chunk must be positive")
    word_starts: list[int] = []
    word_ends: list[int] = []
    for start, end in sentences.tolist():
        for match in _WORD.finditer(text, start, end):
            word_starts.append(match.start())
            word_ends.append(match.end())
    chunks = [
        (word_starts[i], word_ends[min(i + words_per_chunk, len(word_starts)) - 1])
        for i in range(0, len(word_starts), words_per_chunk)
    ]
    return np.asarray(chunks, dtype=np.int64).reshape(-1, 2)


def count_words(text: str) -> int:
    """White-space separated words: the unit of every word budget in longscan."""
    return len(text.split())
