"""In-context retrieval with ``[DOC i]`` tags (SEEDS.md §3): the prompts of the paper's output
formats, and parsers that map a reply's ids and quotes back to passages and exact offsets.

Formats: ``AO`` (answer only), ``ID`` (the relevant ``[DOC i]`` ids, then the answer),
``ID+C`` (ids with the content copied), ``ID+Q`` (short quotes of at most 30 tokens, then the
ids). A reply from a small model is rarely tidy, so the parsers accept the usual variants
("[DOC 3]", "Doc 3", "DOC3", "[3]", "documents 2 and 5"), drop ids that name no passage, and
find a quote in the passages exactly, then ignoring case and spacing, then as the longest
approximate match of at least ``min_ratio`` (difflib).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from longscan.documents import Document


class Format(StrEnum):
    """The paper's output formats (R+Judge needs a judge model and is not offered)."""

    AO = "AO"
    ID = "ID"
    ID_C = "ID+C"
    ID_Q = "ID+Q"


MAX_QUOTE_TOKENS = 30

INSTRUCTIONS = {
    Format.AO: "Answer the question in a few words, using the documents above.",
    Format.ID: ("Name the documents needed to answer the question, then answer it in a few words."),
    Format.ID_C: (
        "Copy the sentences needed to answer the question, each after the tag of its "
        "document, then answer it in a few words."
    ),
    Format.ID_Q: (
        f"Quote the evidence in double quotes (at most {MAX_QUOTE_TOKENS} tokens a quote), each "
        "quote followed by the tag of its document, then answer the question in a few words."
    ),
}
CUES = {Format.AO: "Answer:", Format.ID: "Documents: [DOC", Format.ID_C: "[DOC", Format.ID_Q: '"'}
"""How each reply begins: the prompt ends with it, so that a base model (which copies a
described layout rather than following it) starts in the format; the reply is read as the cue
followed by the model's continuation."""


@dataclass(frozen=True)
class Passage:
    """A tagged block of the prompt: a span of a document."""

    doc_index: int
    start: int
    end: int


def passages_of(doc_index: np.ndarray, spans: np.ndarray) -> list[Passage]:
    """Passages from parallel arrays: each unit's document index and ``(start, end)``."""
    return [
        Passage(int(d), int(s), int(e))
        for d, (s, e) in zip(doc_index.tolist(), spans.tolist(), strict=True)
    ]


@dataclass(frozen=True)
class Prompt:
    """The prompt, and where each ``[DOC i]`` block's text lies in it (``blocks[i - 1]``)."""

    text: str
    passages: tuple[Passage, ...]
    blocks: tuple[tuple[int, int], ...]
    question_start: int


def build_prompt(
    question: str, documents: Sequence[Document], passages: Sequence[Passage], fmt: Format
) -> Prompt:
    """``[DOC 1] text`` blocks, then the question, the format's instruction and its cue."""
    parts, blocks, length = [], [], 0
    for number, passage in enumerate(passages, start=1):
        tag = f"[DOC {number}] "
        body = documents[passage.doc_index].text[passage.start : passage.end]
        blocks.append((length + len(tag), length + len(tag) + len(body)))
        parts.append(tag + body + "\n\n")
        length += len(parts[-1])
    question_part = f"Question: {question}\n{INSTRUCTIONS[fmt]}\n{CUES[fmt]}"
    text = "".join(parts) + question_part
    return Prompt(text, tuple(passages), tuple(blocks), length)


_ID = re.compile(r"\bdoc(?:ument)?s?\s*\[?\s*#?(\d+)\]?|\[(\d+)\]", re.IGNORECASE)
_LIST = re.compile(r"\bdoc(?:ument)?s\s+((?:\d+\s*(?:,|and|&)?\s*)+)", re.IGNORECASE)


def parse_ids(reply: str, count: int) -> list[int]:
    """The 1-based ``[DOC i]`` ids a reply names, first mention first, each once, only those
    of the ``count`` passages shown."""
    found: list[tuple[int, int]] = []
    for match in _ID.finditer(reply):
        found.append((match.start(), int(match.group(1) or match.group(2))))
    for match in _LIST.finditer(reply):  # "documents 2 and 5": every number of the list
        found += [
            (match.start() + m.start(), int(m.group())) for m in re.finditer(r"\d+", match.group(1))
        ]
    ids: list[int] = []
    for _, number in sorted(found):
        if 1 <= number <= count and number not in ids:
            ids.append(number)
    return ids


_QUOTE = re.compile(r'"([^"\n]{3,})"|“([^”\n]{3,})”')


def parse_quotes(reply: str) -> list[str]:
    """Quoted strings of a reply (straight or curly double quotes), in order."""
    return [m.group(1) or m.group(2) for m in _QUOTE.finditer(reply)]


def parse_answer(reply: str) -> str:
    """The first line after the last ``Answer:``, else of the whole reply, stripped."""
    head, sep, tail = reply.rpartition("Answer:")
    return (tail if sep else reply).strip().split("\n", 1)[0].strip()


_COPIED = re.compile(r"^\s*\[?DOC\s*(\d+)\]?\s*:?\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def parse_copied(reply: str, count: int) -> list[tuple[int, str]]:
    """``(id, content)`` of each ``[DOC i]: content`` line of an ID+C reply, for the
    ``count`` passages shown."""
    return [
        (int(m.group(1)), m.group(2))
        for m in _COPIED.finditer(reply)
        if 1 <= int(m.group(1)) <= count and not m.group(2).lower().startswith("answer")
    ]


@dataclass(frozen=True)
class Located:
    """A quote found in a passage: document offsets, and how closely it matched (1 = exact)."""

    doc_index: int
    start: int
    end: int
    ratio: float


def _folded(text: str) -> tuple[str, list[int]]:
    """Lower case with runs of white space as one space, and each folded character's offset."""
    out, where, space = [], [], False
    for i, char in enumerate(text):
        if char.isspace():
            if not space and out:
                out.append(" ")
                where.append(i)
            space = True
            continue
        out.append(char.lower())
        where.append(i)
        space = False
    return "".join(out), where


def locate_quote(
    quote: str,
    documents: Sequence[Document],
    passages: Sequence[Passage],
    min_ratio: float = 0.8,
) -> Located | None:
    """Where ``quote`` lies in the passages: exact, then case- and space-folded, then the best
    approximate match (``difflib``) if it covers ``min_ratio`` of the quote; None otherwise."""
    quote = quote.strip()
    if not quote:
        return None
    for passage in passages:
        text = documents[passage.doc_index].text[passage.start : passage.end]
        at = text.find(quote)
        if at >= 0:
            return Located(
                passage.doc_index, passage.start + at, passage.start + at + len(quote), 1.0
            )
    folded_quote, _ = _folded(quote)
    best: Located | None = None
    for passage in passages:
        text = documents[passage.doc_index].text[passage.start : passage.end]
        folded, where = _folded(text)
        at = folded.find(folded_quote)
        if at >= 0:
            start, end = where[at], where[at + len(folded_quote) - 1] + 1
            return Located(passage.doc_index, passage.start + start, passage.start + end, 1.0)
        matcher = difflib.SequenceMatcher(None, folded, folded_quote, autojunk=False)
        blocks = [b for b in matcher.get_matching_blocks() if b.size]
        if not blocks:
            continue
        covered = sum(b.size for b in blocks) / len(folded_quote)
        first, last = blocks[0], blocks[-1]
        span = (where[first.a], where[last.a + last.size - 1] + 1)
        if (
            covered >= min_ratio
            and span[1] - span[0] <= 2 * len(quote)
            and (best is None or covered > best.ratio)
        ):
            best = Located(
                passage.doc_index, passage.start + span[0], passage.start + span[1], covered
            )
    return best
