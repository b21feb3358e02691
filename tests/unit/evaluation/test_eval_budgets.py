from __future__ import annotations

import pytest

from longscan.documents import Document, Evidence
from longscan.evaluation.budgets import budget_evidence, budget_scores
from longscan.evaluation.measures import parse_measures
from longscan.items import GoldSpan, QAItem


def test_overflowing_unit_is_cut_to_the_remaining_words_with_exact_end(piece):
    document = Document("d", "one two three. four  five\nsix seven. eight nine.")
    first, second, third = piece(document, 0, 14), piece(document, 15, 36), piece(document, 37, 48)
    kept = budget_evidence([first, second, third], 5)
    assert kept[0] == first
    # 3 words used, 2 left: "four  five" (two spaces kept), ending right after "five".
    cut = kept[1]
    assert (cut.start, cut.end, cut.text) == (15, 25, "four  five")
    assert document.text[cut.start : cut.end] == cut.text
    assert len(kept) == 2 and cut.score == second.score


def test_unit_that_fits_exactly_is_kept_whole_and_nothing_follows(piece):
    document = Document("d", "one two three. four five six seven. eight nine.")
    units = [piece(document, 0, 14), piece(document, 15, 35), piece(document, 36, 47)]
    assert budget_evidence(units, 7) == units[:2]
    assert budget_evidence(units, 100) == units
    assert budget_evidence([], 10) == []


@pytest.mark.parametrize("budget", [0, -3, 2.5, True])
def test_budget_must_be_a_positive_integer(budget):
    with pytest.raises(ValueError, match="positive integer"):
        budget_evidence([], budget)


def test_hit_sr_fr_on_three_gold_spans(fox, piece):
    # Gold: inside sentences 0, 2 and 4 (five words each).
    item = QAItem(
        "q",
        "?",
        [fox],
        gold_spans=[GoldSpan("fox", 4, 7), GoldSpan("fox", 53, 58), GoldSpan("fox", 104, 108)],
    )
    ranked = [piece(fox, *span) for span in [(0, 23), (24, 48), (49, 74), (100, 124)]]
    measures = parse_measures(
        [f"{family}@{b}" for b in (1, 5, 10, 12, 20) for family in ("hit", "SR", "FR")]
    )
    scores = budget_scores(item, ranked, measures)
    # 1 word: "The" of sentence 0, which misses [4, 7) ("red"); 5 words: sentence 0 whole.
    assert (scores["hit@1"], scores["SR@1"], scores["FR@1"]) == (0.0, 0.0, 0.0)
    assert (scores["hit@5"], scores["SR@5"], scores["FR@5"]) == (1.0, pytest.approx(1 / 3), 0.0)
    assert scores["SR@10"] == pytest.approx(1 / 3)  # sentence 1 holds no gold
    # 12 words: sentence 2 cut to "The green" (49..58), which reaches into [53, 58).
    assert scores["SR@12"] == pytest.approx(2 / 3) and scores["FR@12"] == 0.0
    assert (scores["hit@20"], scores["SR@20"], scores["FR@20"]) == (1.0, 1.0, 1.0)


def test_gold_documents_are_the_targets_without_spans(fox, piece):
    other = Document("other", "A whale sings. A cat sleeps.")
    item = QAItem("q", "?", [fox, other], gold_doc_ids=["fox", "other"])
    ranked = [piece(other, 0, 14), piece(fox, 0, 23)]
    scores = budget_scores(item, ranked, parse_measures(["hit@3", "SR@3", "FR@3", "FR@8"]))
    assert scores == {"hit@3": 1.0, "SR@3": 0.5, "FR@3": 0.0, "FR@8": 1.0}


def test_answer_hit_for_items_with_answers_only(piece):
    text = "Whales are large. The blue whale is the largest animal. Cats are small."
    document = Document("d", text)
    item = QAItem("q", "largest animal?", [document], answers=["The Blue Whale."])
    ranked = [piece(document, 0, 17), piece(document, 18, 55), piece(document, 56, 71)]
    measures = parse_measures(["ahit@4", "ahit@5", "ahit@6", "ahit@100", "hit@100"])
    # 4 words: "Whales are large. The" -- 5: "... The blue" -- 6: "... The blue whale".
    assert budget_scores(item, ranked, measures) == {
        "ahit@4": 0.0,
        "ahit@5": 0.0,
        "ahit@6": 1.0,
        "ahit@100": 1.0,
    }


def test_answer_is_matched_within_one_unit_not_across_units():
    text = "It was the blue. Whale songs are long."
    document = Document("d", text)
    item = QAItem("q", "?", [document], answers=["blue whale"])
    units = [Evidence("d", 0, 16, text[0:16], 1.0), Evidence("d", 17, 38, text[17:38], 0.5)]
    assert budget_scores(item, units, parse_measures(["ahit@100"])) == {"ahit@100": 0.0}


def test_an_answer_of_parts_scores_the_parts_it_shows_each_in_one_unit(piece):
    text = "Acme Corp filed late. Globex Inc. paid. Initech LLC grew."
    document = Document("d", text)
    parts = ["Acme Corp", "Globex Inc.", "Initech LLC"]
    item = QAItem("q", "?", [document], answers=['["Acme Corp", "Globex Inc."]'])
    item.metadata["answer_parts"] = parts
    ranked = [piece(document, 22, 39), piece(document, 0, 21), piece(document, 40, 57)]
    measures = parse_measures(["aSR@3", "aFR@3", "aSR@7", "aFR@7", "aSR@9", "aFR@9", "ahit@9"])
    assert budget_scores(item, ranked, measures) == {
        "aSR@3": 1 / 3,  # "Globex Inc. paid."
        "aFR@3": 0.0,
        "aSR@7": 2 / 3,
        "aFR@7": 0.0,
        "aSR@9": 1.0,
        "aFR@9": 1.0,
        "ahit@9": 0.0,  # the whole answer, as written, is in no unit
    }
    one_part = QAItem("r", "?", [document], answers=["Initech", "Globex"])  # alternatives
    assert budget_scores(one_part, ranked[:1], measures[:2]) == {"aSR@3": 1.0, "aFR@3": 1.0}
    item.metadata["answer_parts"] = []  # an answer that names nothing: no part to show
    assert budget_scores(item, ranked, measures) == {"ahit@9": 0.0}


def test_families_apply_only_where_they_make_sense(fox, piece):
    measures = parse_measures(["hit@5", "ahit@5"])
    with_gold = QAItem("a", "?", [fox], gold_spans=[GoldSpan("fox", 0, 3)], answers=["red"])
    assert set(budget_scores(with_gold, [], measures)) == {"hit@5"}
    neither = QAItem("b", "?", [fox])
    assert budget_scores(neither, [piece(fox, 0, 23)], measures) == {}
    with pytest.raises(ValueError, match="budget-level"):
        budget_scores(with_gold, [], parse_measures(["nDCG@5"]))
