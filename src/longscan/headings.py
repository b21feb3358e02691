"""The heading each unit of a plain text sits under.

A sentence such as "She released her debut album in 2003." names its subject only in the
article or section title above it, often several paragraphs up. A reader that sees the
sentence and its paragraph cannot tell which of ten articles it belongs to; with the heading
beside it, it can. In plain text a heading is a paragraph of one short line that does not end
as a sentence does ("Newcastle upon Tyne", "Item 7A. Quantitative and Qualitative
Disclosures", "CHAPTER IV"). The rule describes layout only; it names no source.
"""

from __future__ import annotations

import re

import numpy as np

from longscan.documents import Document, per_document
from longscan.tables import MAX_LABEL_WORDS, is_row

_LETTERS = re.compile(r"[^\W\d_]")


def is_heading(text: str) -> bool:
    """A short line with letters that ends as no sentence or list item does, and is not a
    table row."""
    words = text.split()
    return (
        0 < len(words) <= MAX_LABEL_WORDS
        and bool(_LETTERS.search(text))
        and not text.rstrip().endswith((".", "?", "!", ";", ",", ":"))
        and not is_row(text)
    )


@per_document
def section_headings(document: Document) -> np.ndarray:
    """For every unit, the index of the nearest heading above it (``-1``: none). A heading is
    a paragraph holding one unit that ``is_heading``. A heading's own entry is ``-1``: plain
    text does not say whether the heading above is its parent or its sibling (one article's
    title above the next), and a wrong parent is worse than none."""
    units = document.sentence_paragraph
    sizes = np.bincount(units, minlength=len(document.paragraphs))
    spans = document.sentences
    result = np.full(len(units), -1, dtype=np.int64)
    current = -1
    for index, paragraph in enumerate(units.tolist()):
        start, end = spans[index]
        if sizes[paragraph] == 1 and is_heading(document.text[start:end]):
            current = index
        else:
            result[index] = current
    return result
