from __future__ import annotations

import numpy as np
import pytest

from longscan.documents import Document
from longscan.evaluation.gold import (
    contains_answer,
    covered_gold_spans,
    gold_documents,
    gold_sentences,
    gold_unit_labels,
    normalize_answer,
    overlap_labels,
    sentences_of_units,
)
from longscan.items import GoldSpan, QAItem


def test_overlap_needs_a_shared_character():
    spans = np.array([[0, 5], [5, 10], [10, 15]])
    # [5, 10) touches [0, 5) and [10, 15) but shares a character with neither.
    assert overlap_labels(spans, [(5, 10)]).tolist() == [False, True, False]
    assert overlap_labels(spans, [(4, 6)]).tolist() == [True, True, False]
    assert overlap_labels(spans, []).tolist() == [False, False, False]


def test_gold_sentences_are_those_overlapping_a_span(fox):
    # From the last character of sentence 1 into sentence 2, plus a span inside sentence 5.
    item = QAItem(
        "q", "which fox?", [fox], gold_spans=[GoldSpan("fox", 47, 52), GoldSpan("fox", 130, 133)]
    )
    assert gold_sentences(item) == [("fox", 1), ("fox", 2), ("fox", 5)]
    labels = gold_unit_labels(item)
    assert labels["fox"].tolist() == [False, True, True, False, False, True]
    # Chunks of 10 words: [0, 48), [49, 99), [100, 149).
    assert gold_unit_labels(item, "chunk", chunk_words=10)["fox"].tolist() == [True, True, True]
    with pytest.raises(ValueError, match="unit kind"):
        gold_unit_labels(item, "paragraph")


def test_gold_sentences_empty_without_spans(fox):
    assert gold_sentences(QAItem("q", "?", [fox], answers=["red"])) == []


def test_gold_documents_prefer_ids_then_span_documents(fox):
    other = Document("other", "Nothing here.")
    with_ids = QAItem("a", "?", [fox, other], gold_doc_ids=["other", "other"])
    assert gold_documents(with_ids) == ["other"]
    with_spans = QAItem("b", "?", [fox, other], gold_spans=[GoldSpan("other", 0, 7)])
    assert gold_documents(with_spans) == ["other"]


def test_covered_gold_spans_checks_the_document(fox, piece):
    other = Document("other", fox.text)
    item = QAItem(
        "q", "?", [fox, other], gold_spans=[GoldSpan("fox", 0, 5), GoldSpan("other", 0, 5)]
    )
    units = [piece(fox, 0, 23)]
    assert covered_gold_spans(item, units).tolist() == [True, False]
    assert covered_gold_spans(item, []).tolist() == [False, False]


def test_chunks_map_to_sentences_in_rank_order_first_occurrence_wins(fox, piece):
    ranked = [
        piece(fox, 49, 99),  # sentences 2, 3
        piece(fox, 20, 60),  # sentences 0, 1, 2 (2 already ranked)
        piece(fox, 125, 149),  # sentence 5
    ]
    expected = [("fox", 2), ("fox", 3), ("fox", 0), ("fox", 1), ("fox", 5)]
    assert sentences_of_units(ranked, [fox]) == expected
    assert sentences_of_units(ranked, [fox], limit=3) == expected[:3]


def test_sentence_units_map_to_themselves(fox, piece):
    ranked = [piece(fox, *span) for span in [(100, 124), (0, 23)]]
    assert sentences_of_units(ranked, [fox]) == [("fox", 4), ("fox", 0)]


def test_unknown_document_is_an_error(fox, piece):
    with pytest.raises(ValueError, match="unknown document"):
        sentences_of_units([piece(fox, 0, 5)], [Document("else", "x")])


def test_answer_normalisation_and_matching():
    assert normalize_answer('  "The  Blue\nWhale."  ') == "the blue whale"
    assert contains_answer("Indeed, the BLUE   whale\nis big.", ["the blue whale."])
    assert contains_answer("It was 42.", ["41", "42"])
    assert not contains_answer("The cat sat.", ["a"])  # word boundaries
    assert not contains_answer("In 1422 it fell.", ["42"])
    assert not contains_answer("Anything.", ["", " ... "])  # empty answers never match
