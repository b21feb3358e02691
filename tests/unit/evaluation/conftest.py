"""Tiny hand-built documents shared by the evaluation tests.

``fox`` has six five-word sentences; sentence i is ``FOX_SPANS[i]``:
"The red fox jumps high. The blue fox jumps high. ... The gold fox jumps high."
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longscan.documents import Document, Evidence

COLOURS = ("red", "blue", "green", "gray", "pink", "gold")
FOX_SPANS = [(0, 23), (24, 48), (49, 74), (75, 99), (100, 124), (125, 149)]


def _fox_text(colours: tuple[str, ...]) -> str:
    return " ".join(f"The {colour} fox jumps high." for colour in colours)


@pytest.fixture
def make_fox() -> Callable[..., Document]:
    """``make_fox(doc_id, colours)``: a fox document with one sentence per colour."""

    def make(doc_id: str = "fox", colours: tuple[str, ...] = COLOURS) -> Document:
        return Document(doc_id, _fox_text(colours))

    return make


@pytest.fixture
def fox(make_fox) -> Document:
    document = make_fox()
    assert document.sentences.tolist() == [list(span) for span in FOX_SPANS]
    return document


@pytest.fixture
def piece() -> Callable[..., Evidence]:
    """``piece(document, start, end)``: the Evidence of ``document.text[start:end]``."""

    def make(document: Document, start: int, end: int, score: float = 0.0) -> Evidence:
        return Evidence(document.id, start, end, document.text[start:end], score)

    return make
