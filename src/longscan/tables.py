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

import functools
import re
from pathlib import Path

from longscan.documents import Document, Evidence, per_document
from longscan.files import file_sha256

LOOK_BACK = 80  # units above a row searched for its column header (a long statement's rows)
MAX_LABEL_WORDS = 12  # a title or group label is a short line
MIN_ROW_FIGURES = 2  # numbers on a line that make it a table row
TITLE_LINES = 2  # label lines right above a column header that make its title block
PAGE_HEADER_PAGES = 3  # pages a line must head to be a running page header,
PAGE_HEADER_SHARE = 0.25  # and the share of the page numbers it must follow

_FIGURE = re.compile(r"^\(?[$€£]?\(?-?\d[\d,]*(\.\d+)?%?\)?$")
_YEAR = re.compile(r"\b(19|20)\d\d\b")
_MONTH = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November"
    r"|December)\b",
    re.IGNORECASE,
)
_ABBREVIATION_END = re.compile(r"(^|\s)[A-Z][A-Za-z.]{0,3}\.$")  # "Inc.", "Co.", "L.P."
_PAGE_NUMBER = re.compile(r"^([A-Z]{1,2}-)?\d{1,4}\.?$|^[ivxl]{1,6}$", re.IGNORECASE)
_LETTERS = re.compile(r"[A-Za-z]")


@functools.cache
def rules_digest() -> str:
    """A digest of these rules' source: what a row reads changes only with it, so vectors and
    training data made under other rules are keyed apart (read once per process)."""
    return file_sha256(Path(__file__))[:16]


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
    """A short line naming two or more years or months: the dates over a table's columns
    ("2025 2024", or "March 31, December 31," above them)."""
    dates = len(_YEAR.findall(text)) + len(_MONTH.findall(text))
    return dates >= 2 and len(text.split()) <= 3 * MAX_LABEL_WORDS


def is_label(text: str) -> bool:
    """A short line of words, not a sentence and not a row: a title or a row-group label.
    A final full stop that ends an abbreviation ("Apple Inc.", "Ascent Industries Co.")
    does not make a sentence."""
    words = text.split()
    stripped = text.rstrip()
    sentence = stripped.endswith((".", "?", "!", ";", ",")) and not _ABBREVIATION_END.search(
        stripped
    )
    return (
        0 < len(words) <= MAX_LABEL_WORDS
        and bool(_LETTERS.search(text))
        and _figures(words) == 0
        and not sentence
    )


def is_period_line(text: str) -> bool:
    """A short line that dates a table's columns above its line of years: "Three months ended
    March 31," over "2024 2023", or "Fiscal 2024". It is part of the column header, so the
    title block above it is still found."""
    return _dated_short_line(text) and not is_row(text)


def _dated_short_line(text: str) -> bool:
    """``is_period_line`` but for the row test, which ``row_context`` has already made."""
    return (
        0 < len(text.split()) <= MAX_LABEL_WORDS
        and bool(_MONTH.search(text) or _YEAR.search(text))
        and not text.rstrip().endswith((".", "?", "!", ";"))
    )


def closes_group(text: str) -> bool:
    """A row that totals its group ("Total Costs and Expenses 5,774 4,344"): the rows below it
    are outside that group."""
    return row_label(text).lower().startswith("total")


def is_table_note(text: str) -> bool:
    """A line wholly in parentheses: "(In millions, except per-share amounts)", "(Unaudited)".
    Under a table's title it qualifies the figures; it may be longer than a label."""
    stripped = text.strip()
    return stripped.startswith("(") and stripped.endswith(")")


def running_headers(texts: list[str], labels: list[bool]) -> set[int]:
    """The units that repeat a running page header ("Table of Contents" on every page): a
    label that follows a page number ("12", "F-3", "ii") on at least ``PAGE_HEADER_PAGES``
    pages and on at least ``PAGE_HEADER_SHARE`` of them. Such a line says where a page
    begins, not what a table is. An issuer's name heading its five statement pages is no
    running header: it follows too few of the page numbers. ``labels``: ``is_label`` of
    each text, as ``row_context`` has already found them."""
    normal = [" ".join(text.replace("\u200b", " ").split()).lower() for text in texts]
    pages = [index for index, text in enumerate(normal) if _PAGE_NUMBER.match(text)]
    after_page: dict[str, int] = {}
    for page in pages:
        if page + 1 < len(texts) and labels[page + 1]:
            after_page[normal[page + 1]] = after_page.get(normal[page + 1], 0) + 1
    least = max(PAGE_HEADER_PAGES, PAGE_HEADER_SHARE * len(pages))
    repeated = {text for text, count in after_page.items() if count >= least}
    return {index for index, text in enumerate(normal) if text in repeated}


def context_texts(document: Document, row: int) -> list[str]:
    """The text of each unit that gives ``row`` its meaning (``row_context``), in order; none
    for a unit that is no table row with context."""
    spans = document.sentences
    return [document.text[spans[i, 0] : spans[i, 1]] for i in row_context(document).get(row, ())]


def sentence_of(document: Document, evidence: Evidence) -> int | None:
    """The index of the document's sentence that ``evidence`` is exactly, else None: a chunk
    that starts on a row is never taken for that row."""
    if not 0 <= evidence.unit < len(document.sentences):
        return None
    if tuple(document.sentences[evidence.unit].tolist()) != (evidence.start, evidence.end):
        return None
    return evidence.unit


def table_context(document: Document, evidence: Evidence) -> str:
    """The title, column header and row group of a table row given as evidence
    (``context_texts``), joined by " | "; "" for any other unit. A row of figures alone does
    not say what they are."""
    row = sentence_of(document, evidence)
    if row is None:
        return ""
    return " | ".join(" ".join(text.split()) for text in context_texts(document, row))


@per_document
def row_context(document: Document) -> dict[int, tuple[int, ...]]:
    """For each table row among the document's units, the units that give it meaning, in
    document order: the table's title block (up to ``TITLE_LINES`` label lines right above
    its column header, such as the statement's name and the issuer's), the
    column header (every date line of it), the section label between the header and the row
    ("LIABILITIES AND EQUITY") and the row's group label (the nearest label ending in ``:``).
    Running page headers are never context. A row with no column header within
    ``LOOK_BACK`` units takes the nearest label above it as its title. A group closed by
    a total row between it and the row ("Total Costs and Expenses") is not the row's group.
    Rows with none of these are left out."""
    texts = document.sentence_texts()
    rows = [is_row(text) for text in texts]  # each unit classified once, not once per row
    labels = [is_label(text) for text in texts]
    headers = [is_column_header(text) for text in texts]
    periods = [not row and _dated_short_line(text) for row, text in zip(rows, texts, strict=True)]
    notes = [is_table_note(text) for text in texts]
    totals = [row and closes_group(text) for row, text in zip(rows, texts, strict=True)]
    furniture = running_headers(texts, labels)
    context: dict[int, tuple[int, ...]] = {}
    for index in (i for i, row in enumerate(rows) if row):
        found: list[int] = []
        group = section = None
        closed = 0  # groups that total rows between here and the row have closed
        above = index - 1
        while above >= max(index - LOOK_BACK, 0):
            if above in furniture:
                pass
            elif headers[above]:
                found = _header_and_title(above, headers, periods, labels, notes, furniture)
                break
            elif totals[above]:
                closed += 1
            elif labels[above] and texts[above].rstrip().endswith(":"):
                if closed:
                    closed -= 1
                elif group is None and section is None:
                    group = above
            elif labels[above] and section is None:
                section = above
            above -= 1
        found.extend(i for i in (section, group) if i is not None)
        if found:
            context[index] = tuple(sorted(found))
    return context


@per_document
def rows_of_context(document: Document) -> dict[int, tuple[int, ...]]:
    """``row_context`` turned around: for each unit that gives rows their meaning (a table's
    title, a column header, a row group), the rows it gives meaning to, in document order."""
    rows: dict[int, list[int]] = {}
    for row, context in row_context(document).items():
        for unit in context:
            rows.setdefault(unit, []).append(row)
    return {unit: tuple(members) for unit, members in rows.items()}


def _header_and_title(
    header: int,
    headers: list[bool],
    periods: list[bool],
    labels: list[bool],
    notes: list[bool],
    furniture: set[int],
) -> list[int]:
    """The column header's lines, from its lowest ``header`` up (its date lines, and the
    period lines above them), and the title block right above them: up to ``TITLE_LINES``
    labels, up to anything else or a running page header. Notes such as "(Unaudited)" are
    passed over: they would crowd out the statement's name."""
    found = [header]
    above = header - 1
    while above >= 0 and (headers[above] or periods[above]) and above not in furniture:
        found.append(above)
        above -= 1
    title = 0
    while above >= 0 and title < TITLE_LINES and above not in furniture:
        if not (labels[above] or notes[above]):
            break
        if labels[above] and not notes[above]:
            found.append(above)
            title += 1
        above -= 1
    return found
