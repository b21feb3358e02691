from __future__ import annotations

import math

import ir_measures
import pytest

from longscan.documents import Evidence
from longscan.evaluation import measures as measures_module
from longscan.evaluation.measures import (
    Measure,
    default_measures,
    document_ranking,
    document_scores,
    parse_measures,
    sentence_key,
    sentence_scores,
)

SENTENCE = parse_measures([f"{f}@{k}" for f in ("R", "P", "nDCG") for k in (1, 5, 10)])
DOCUMENT = parse_measures(["docSR@1", "docSR@10", "docR@1", "docFR@1", "docFR@10"])


def test_names_parse_and_round_trip():
    measure = Measure.parse(" nDCG@10 ")
    assert measure == Measure("nDCG", 10) and measure.name == "nDCG@10" == str(measure)
    assert measure.level == "sentence"
    assert Measure.parse("hit@300").level == "budget"
    assert Measure.parse("docFR@10").level == "document"
    assert Measure.parse(measure) is measure
    expected = [Measure("SR", 300), Measure("hit", 100)]
    assert parse_measures(["SR@300", "SR@300", "hit@100"]) == expected


@pytest.mark.parametrize("name", ["nDCG", "nDCG@", "@10", "foo@10", "R@0", "R@-1", "R@1.5"])
def test_bad_names_are_rejected(name):
    with pytest.raises(ValueError):
        Measure.parse(name)


def test_default_measures_cover_every_family():
    names = [m.name for m in default_measures((100, 300), ks=(1, 5), doc_ks=(1, 10))]
    assert names == [
        "hit@100",
        "hit@300",
        "SR@100",
        "SR@300",
        "FR@100",
        "FR@300",
        "ahit@100",
        "ahit@300",
        "aSR@100",
        "aSR@300",
        "aFR@100",
        "aFR@300",
        "R@1",
        "R@5",
        "P@1",
        "P@5",
        "nDCG@1",
        "nDCG@5",
        "docSR@1",
        "docSR@10",
        "docR@1",
        "docFR@1",
        "docFR@10",
        "docNDCG@1",
        "docNDCG@10",
    ]


GOLD = {"q1": [("d", 0), ("d", 3)], "q2": [("d", 7)], "q3": []}
RANKED = {"q1": [("d", 1), ("d", 0), ("d", 2), ("d", 3), ("d", 4)]}


def test_sentence_measures_match_hand_computed_values():
    scores = sentence_scores(GOLD, RANKED, SENTENCE)
    q1 = scores["q1"]
    # Gold at ranks 2 and 4 (1-based) of 5.
    assert (q1["R@1"], q1["P@1"], q1["nDCG@1"]) == (0.0, 0.0, 0.0)
    assert q1["R@5"] == 1.0 and q1["P@5"] == pytest.approx(2 / 5)
    assert q1["P@10"] == pytest.approx(2 / 10)  # divided by k, as trec_eval does
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert q1["nDCG@5"] == pytest.approx(dcg / ideal) == q1["nDCG@10"]
    assert q1["nDCG@5"] == pytest.approx(0.650920, abs=1e-6)


def test_query_missing_from_run_scores_zero_and_empty_gold_is_skipped():
    scores = sentence_scores(GOLD, RANKED, SENTENCE)
    assert set(scores) == {"q1", "q2"}
    assert scores["q2"] == {m.name: 0.0 for m in SENTENCE}
    only_missing = sentence_scores({"q2": [("d", 7)]}, {}, SENTENCE)
    assert only_missing == {"q2": {m.name: 0.0 for m in SENTENCE}}


def test_ir_measures_computes_the_values(monkeypatch):
    calls = []
    real = ir_measures.iter_calc

    def spy(measures, qrels, run):
        calls.append((list(measures), qrels, run))
        return real(measures, qrels, run)

    monkeypatch.setattr(measures_module.ir_measures, "iter_calc", spy)
    scores = sentence_scores(GOLD, RANKED, SENTENCE)
    ((native, qrels, run),) = calls
    assert [str(m) for m in native] == [m.name for m in SENTENCE]
    assert qrels == {"q1": {"d#0": 1, "d#3": 1}, "q2": {"d#7": 1}}
    # Strictly decreasing pseudo-scores in rank order.
    assert run == {"q1": {"d#1": 5.0, "d#0": 4.0, "d#2": 3.0, "d#3": 2.0, "d#4": 1.0}}
    # The means of the per-query values are ir-measures' own aggregate.
    aggregate = ir_measures.calc_aggregate(native, qrels, run)
    for measure in native:
        mean = sum(scores[q][str(measure)] for q in scores) / len(scores)
        assert mean == pytest.approx(aggregate[measure])


def test_pseudo_scores_keep_our_order_against_id_tie_breaking():
    # Equal scores would let ir-measures order by id; ranks decide instead.
    gold = {"q": [("d", 1)]}
    assert sentence_scores(gold, {"q": [("d", 1), ("d", 2)]}, SENTENCE)["q"]["P@1"] == 1.0
    assert sentence_scores(gold, {"q": [("d", 2), ("d", 1)]}, SENTENCE)["q"]["P@1"] == 0.0


def test_sentence_key_and_level_checks():
    assert sentence_key("a/b.txt", 12) == "a/b.txt#12"
    with pytest.raises(ValueError, match="sentence-level"):
        sentence_scores(GOLD, RANKED, parse_measures(["hit@100"]))
    with pytest.raises(ValueError, match="document-level"):
        document_scores(["a"], ["a"], parse_measures(["R@1"]))


def _unit(doc_id: str) -> Evidence:
    return Evidence(doc_id, 0, 1, "x", 0.0)


def test_document_ranking_is_first_appearance_order():
    assert document_ranking([_unit(d) for d in "AABACB"]) == ["A", "B", "C"]


RANKING = ["A", "B", "C", "D"]


def test_single_source_queries_get_sr_and_r_at_1_but_not_fr():
    assert document_scores(RANKING, ["B"], DOCUMENT) == {
        "docSR@1": 0.0,
        "docSR@10": 1.0,
        "docR@1": 0.0,
    }
    assert document_scores(RANKING, ["A"], DOCUMENT) == {
        "docSR@1": 1.0,
        "docSR@10": 1.0,
        "docR@1": 1.0,
    }


def test_multi_source_queries_get_sr_and_fr_but_not_r_at_1():
    assert document_scores(RANKING, ["A", "C"], DOCUMENT) == {
        "docSR@1": 0.5,
        "docSR@10": 1.0,
        "docFR@1": 0.0,
        "docFR@10": 1.0,
    }
    # A gold document never retrieved: SR@10 = 2/3, FR@10 = 0.
    scores = document_scores(RANKING, ["A", "C", "Z"], DOCUMENT)
    assert scores["docSR@10"] == pytest.approx(2 / 3) and scores["docFR@10"] == 0.0


def test_document_ndcg_matches_the_hand_computed_value_for_every_query():
    ndcg = parse_measures(["docNDCG@1", "docNDCG@3", "docNDCG@10"])
    # Gold A (rank 0) and C (rank 2): DCG@3 = 1 + 1/log2(4); ideal = 1 + 1/log2(3).
    scores = document_scores(RANKING, ["A", "C"], ndcg)
    assert scores["docNDCG@1"] == 1.0 and scores["docNDCG@10"] == scores["docNDCG@3"]
    assert scores["docNDCG@3"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert document_scores(RANKING, ["B"], ndcg)["docNDCG@1"] == 0.0
    assert document_scores(RANKING, ["D"], ndcg)["docNDCG@10"] == pytest.approx(1 / math.log2(5))
    assert document_scores([], ["A"], ndcg) == dict.fromkeys([m.name for m in ndcg], 0.0)
    assert document_scores(RANKING, [], ndcg) == {}


def test_no_gold_documents_no_document_scores_and_empty_ranking_scores_zero():
    assert document_scores(RANKING, [], DOCUMENT) == {}
    assert document_scores([], ["A", "B"], DOCUMENT) == {
        "docSR@1": 0.0,
        "docSR@10": 0.0,
        "docFR@1": 0.0,
        "docFR@10": 0.0,
    }
