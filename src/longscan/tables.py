"""What a table row needs to be read alone: its table's title, column header and row group.

Filings state their figures in rows such as ``Services 6,698 6,296 19,738 18,634``. Each row
is a line of its own, and so a unit of its own that can be cited and highlighted. Read alone,
though, it does not say which table it belongs to (cost of sales, not net sales), which
columns it has (quarters of 2025 and 2024) or what its unit is. That information sits in
short lines a few lines above the row. This module finds those lines as *units of the same
document*, so a reader can put their text beside the row while the row's offsets stay exactly
those of the original text.

The rules only describe how a table is laid out: numbers across a line, a short label line
above a group of rows, a line of years or dates over the columns. They name no company,
statement or benchmark.
"""

from __future__ import annotations

import re

from longscan.documents import Document, Evidence

LOOK_BACK = 40  # units above a row searched for its title, column header and group label
MAX_LABEL_WORDS = 12  # a title or group label is a short line
MIN_ROW_FIGURES = 2  # numbers on a line that make it a table row

_FIGURE = re.compile(r"^\(?[$€£]?\(?-?\d[\d,]*(\.\d+)?%?\)?$")
_YEAR = re.compile(r"\b(19|20)\d\d\b")
_LETTERS = re.compile(r"[A-Za-z]")


def _figures(words: list[str]) -> int:
    return sum(bool(_FIGURE.match(word)) for word in words)


def is_row(text: str) -> bool:
    """A line holding at least two figures and little else, not ending as a sentence does:
    a table row."""
    words = text.split()
    figures = _figures(words)
    sentence = text.rstrip().endswith((".", "?", "!"))
    return figures >= MIN_ROW_FIGURES and figures * 2 >= len(words) - 6 and not sentence


def row_label(text: str) -> str:
    """The words of a row before its first figure ("Services" of "Services 6,698 6,296")."""
    words = []
    for word in text.split():
        if _FIGURE.match(word) or word in ("$", "€", "£"):
            break
        words.append(word)
    return " ".join(words)


def is_column_header(text: str) -> bool:
    """A short line naming two or more years: the dates over a table's columns."""
    return len(_YEAR.findall(text)) >= 2 and len(text.split()) <= 3 * MAX_LABEL_WORDS


def is_label(text: str) -> bool:
    """A short line of words, not a sentence and not a row: a title or a row-group label."""
    words = text.split()
    return (
        0 < len(words) <= MAX_LABEL_WORDS
        and bool(_LETTERS.search(text))
        and _figures(words) == 0
        and not text.rstrip().endswith((".", "?", "!", ";", ","))
    )


def context_texts(document: Document, row: int) -> list[str]:
    """The text of each unit that gives ``row`` its meaning (``row_context``), in order; none
    for a unit that is no table row with context."""
    spans = document.sentences
    return [document.text[spans[i, 0] : spans[i, 1]] for i in document.row_context.get(row, ())]


def table_context(document: Document, evidence: Evidence) -> str:
    """The title, column header and row group of a table row given as evidence
    (``context_texts``), joined by " | "; "" for any other unit. A row of figures alone does
    not say what they are. Only a unit that is exactly one of the document's sentences is
    looked up, so a chunk that starts on a row is never given that row's context."""
    if not 0 <= evidence.unit < len(document.sentences):
        return ""
    if tuple(document.sentences[evidence.unit].tolist()) != (evidence.start, evidence.end):
        return ""
    return " | ".join(" ".join(text.split()) for text in context_texts(document, evidence.unit))


def row_context(document: Document) -> dict[int, tuple[int, ...]]:
    """For each table row among the document's units, the units that give it meaning, in
    document order: the table's title (the nearest label line above the column header, or
    above the rows), the column header (with the label lines right above it, such as
    "Three Months Ended") and the row's group label (a label ending in ``:`` below the
    header). Rows with none of these are left out."""
    texts = document.sentence_texts()
    rows = [is_row(text) for text in texts]  # each unit classified once, not once per row
    labels = [is_label(text) for text in texts]
    headers = [is_column_header(text) for text in texts]
    context: dict[int, tuple[int, ...]] = {}
    for index in (i for i, row in enumerate(rows) if row):
        header: list[int] = []
        group = title = None
        above = index - 1
        while above >= max(index - LOOK_BACK, 0):
            if not header and headers[above]:
                header.append(above)
                while above > 0 and len(header) < 3 and labels[above - 1]:
                    above -= 1
                    header.append(above)
            elif labels[above] and texts[above].endswith(":"):
                group = above if group is None and not header else group
            elif labels[above]:
                title = above
                break
            above -= 1
        found = tuple(sorted(i for i in (title, *header, group) if i is not None))
        if found:
            context[index] = found
    return context
