from __future__ import annotations

import pytest

from longscan.documents import Document, Evidence
from longscan.selection import select

TEXT = "A one. A two. A three.\n\nB one. B two."


def hit(doc: Document, sentence: int, score: float) -> Evidence:
    start, end = (int(v) for v in doc.sentences[sentence])
    return Evidence(doc.id, start, end, doc.text[start:end], score, sentence)


@pytest.fixture
def doc() -> Document:
    return Document("d", TEXT)


def test_top_k_and_document_order(doc: Document) -> None:
    ranked = [hit(doc, 4, 0.9), hit(doc, 0, 0.8), hit(doc, 2, 0.1)]
    assert [e.text for e in select(ranked, [doc], top_k=2)] == ["B two.", "A one."]
    assert [e.text for e in select(ranked, [doc], top_k=2, order="document")] == [
        "A one.",
        "B two.",
    ]


def test_budget_stops_before_overflow(doc: Document) -> None:
    ranked = [hit(doc, 4, 0.9), hit(doc, 0, 0.8), hit(doc, 2, 0.1)]
    assert [e.text for e in select(ranked, [doc], budget_words=5)] == ["B two.", "A one."]


def test_neighbours_stay_in_the_paragraph_and_merge(doc: Document) -> None:
    ranked = [hit(doc, 0, 0.9), hit(doc, 1, 0.5), hit(doc, 3, 0.4)]
    selected = select(ranked, [doc], neighbours=1)
    assert [e.text for e in selected] == ["A one. A two. A three.", "B one. B two."]
    assert selected[0].score == 0.9
    for e in selected:
        assert doc.text[e.start : e.end] == e.text


def test_a_merged_span_keeps_the_rank_and_unit_of_its_best_hit(doc: Document) -> None:
    ranked = [hit(doc, 1, 0.9), hit(doc, 4, 0.8), hit(doc, 0, 0.7)]  # 1 and 0 share a paragraph
    selected = select(ranked, [doc], paragraph=True)
    assert [(e.text, e.score, e.unit) for e in selected] == [
        ("A one. A two. A three.", 0.9, 1),
        ("B one. B two.", 0.8, 4),
    ]
    # each paragraph points at the sentences that were found in it, best first
    found = [[doc.text[a:b] for a, b in e.found] for e in selected]
    assert found == [["A two.", "A one."], ["B two."]]
    alone = select(ranked, [doc])  # nothing widened: each span is its sentence
    assert all(e.found == () for e in alone)


def test_paragraph_expansion(doc: Document) -> None:
    selected = select([hit(doc, 1, 1.0)], [doc], paragraph=True)
    assert [e.text for e in selected] == ["A one. A two. A three."]


def test_only_the_best_hits_are_widened(doc: Document) -> None:
    ranked = [hit(doc, 3, 1.0), hit(doc, 1, 0.5)]
    selected = select(ranked, [doc], paragraph=True, widened=1)
    assert [e.text for e in selected] == ["B one. B two.", "A two."]
    assert select(ranked, [doc], paragraph=True, widened=0) == select(ranked, [doc])
    with pytest.raises(ValueError):
        select(ranked, [doc], paragraph=True, widened=-1)
    with pytest.raises(ValueError, match="nothing to widen"):  # would silently do nothing
        select(ranked, [doc], widened=1)


def test_a_paragraph_over_the_budget_gives_its_unit_alone(doc: Document) -> None:
    """A widened unit that does not fit is read alone rather than ending the selection
    empty (a long paragraph, a table): the budget still holds."""
    ranked = [hit(doc, 1, 1.0), hit(doc, 3, 0.5)]
    selected = select(ranked, [doc], paragraph=True, budget_words=5)
    assert [e.text for e in selected] == ["A two.", "B one."]
    assert sum(len(e.text.split()) for e in selected) <= 5
    widened = select(ranked, [doc], neighbours=1, budget_words=2)
    assert [e.text for e in widened] == ["A two."]


def test_bad_arguments(doc: Document) -> None:
    with pytest.raises(ValueError):
        select([], [doc], top_k=0)
    with pytest.raises(ValueError):
        select([], [doc], order="random")  # type: ignore[arg-type]
