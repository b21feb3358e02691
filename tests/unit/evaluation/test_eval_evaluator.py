from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pytest

from longscan.documents import Document, Evidence
from longscan.evaluation.evaluator import (
    EvaluationResult,
    LengthBuckets,
    evaluate,
    evidence_position,
)
from longscan.items import GoldSpan, QAItem
from longscan.readers.files import read_file
from longscan.retrievers.base import Retriever, Units
from longscan.tables import context_texts

WHALE = "Whales are large. The blue whale is the largest animal. Cats are small."


class ScriptedRetriever(Retriever):
    """Ranks the unit texts listed for a query first, in that order; the rest tie at 0.

    A query scripted as ``None`` gets no evidence at all, like a retriever that gives up.
    """

    name = "scripted"

    def __init__(self, script: dict[str, list[str] | None], unit: str = "sentence") -> None:
        self.script = script
        self.unit = unit

    def retrieve(
        self, query: str, documents: Sequence[Document], top_k: int | None = None
    ) -> list[Evidence]:
        if self.script.get(query, []) is None:
            return []
        return super().retrieve(query, documents, top_k)

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        preferred = self.script.get(query) or []
        scores = np.zeros(len(units))
        for rank, text in enumerate(preferred):
            scores[units.texts.index(text)] = len(preferred) - rank
        return scores


@pytest.fixture
def items(make_fox) -> list[QAItem]:
    fox = make_fox()
    fox2 = make_fox("fox2", ("black", "white", "brown", "olive", "teal", "plum"))
    whale = Document("whale", WHALE)
    return [
        QAItem("one", "gray?", [fox], gold_spans=[GoldSpan("fox", 75, 99)]),
        QAItem(
            "two",
            "two?",
            [fox2, whale],
            gold_spans=[GoldSpan("fox2", 4, 9), GoldSpan("whale", 22, 32)],
        ),
        QAItem("three", "biggest?", [whale], answers=["Blue whale"]),
        QAItem(
            "silent",
            "silent",
            [fox],
            gold_spans=[GoldSpan("fox", 0, 3)],
            metadata={"evidence_position": 0.9},
        ),
        QAItem(
            "four",
            "four?",
            [fox, whale],
            gold_doc_ids=["whale"],
            metadata={"evidence_position": "middle"},
        ),
    ]


SCRIPT = {
    "gray?": ["The gray fox jumps high."],
    "two?": [
        "The blue whale is the largest animal.",
        "Cats are small.",
        "The black fox jumps high.",
    ],
    "biggest?": ["Whales are large.", "The blue whale is the largest animal."],
    "silent": None,
    "four?": ["The red fox jumps high."],
}


@pytest.fixture
def result(items) -> EvaluationResult:
    return evaluate(
        ScriptedRetriever(SCRIPT),
        items,
        budgets=(5, 10, 20),
        ks=(1, 5),
        doc_ks=(1, 10),
        length_edges=(20, 40),
        progress=False,
    )


def test_per_item_scores_match_hand_computed_values(result):
    records = {record.item_id: record for record in result.records}
    one = records["one"].scores
    assert {name: one[name] for name in ("hit@5", "SR@5", "FR@5", "R@1", "P@1", "nDCG@1")} == {
        "hit@5": 1.0,
        "SR@5": 1.0,
        "FR@5": 1.0,
        "R@1": 1.0,
        "P@1": 1.0,
        "nDCG@1": 1.0,
    }
    assert not any(name.startswith(("doc", "a")) for name in one)  # one document, spans

    two = records["two"].scores
    # Ranked: whale s1 (7 words, gold), whale s2 (3), fox2 s0 (5, gold), ...
    assert (two["hit@5"], two["SR@5"], two["FR@5"]) == (1.0, 0.5, 0.0)
    assert (two["SR@10"], two["SR@20"], two["FR@20"]) == (0.5, 1.0, 1.0)
    assert (two["R@1"], two["P@1"], two["R@5"], two["P@5"]) == (0.5, 1.0, 1.0, 0.4)
    assert two["nDCG@5"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert {k: v for k, v in two.items() if k.startswith("doc")} == {
        "docSR@1": 0.5,
        "docSR@10": 1.0,
        "docFR@1": 0.0,
        "docFR@10": 1.0,
        "docNDCG@1": 1.0,
        "docNDCG@10": 1.0,
    }

    # "Whales are large. The blue" is 5 words; the answer needs the 6th.
    # An answer of one part: aSR and aFR are ahit.
    assert records["three"].scores == {
        f"{family}@{budget}": value
        for family in ("ahit", "aSR", "aFR")
        for budget, value in ((5, 0.0), (10, 1.0), (20, 1.0))
    }

    four = records["four"].scores
    assert {k: v for k, v in four.items() if k.startswith("doc")} == {
        "docSR@1": 0.0,
        "docSR@10": 1.0,
        "docR@1": 0.0,
        "docNDCG@1": 0.0,
        "docNDCG@10": pytest.approx(1 / math.log2(3)),  # the gold document second
    }
    assert four["hit@20"] == 0.0  # 20 words of fox; the gold document is the whale


def test_item_without_evidence_scores_zero_instead_of_vanishing(result):
    silent = next(record for record in result.records if record.item_id == "silent")
    assert silent.units == 0
    expected = [f"{f}@{b}" for f in ("hit", "SR", "FR") for b in (5, 10, 20)]
    expected += [f"{f}@{k}" for f in ("R", "P", "nDCG") for k in (1, 5)]
    assert silent.scores == dict.fromkeys(expected, 0.0)


def test_aggregates_average_over_the_items_a_measure_applies_to(result):
    overall = result.overall
    assert overall["items"] == 5
    assert overall["hit@5"] == pytest.approx((1 + 1 + 0 + 0) / 4)
    assert overall["R@1"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert overall["ahit@10"] == 1.0
    assert overall["docR@1"] == 0.0  # item four only: single source
    assert overall["docFR@10"] == 1.0  # item two only: multi source
    assert overall["s/doc"] > 0 and overall["words/s"] > 0


def test_length_buckets_and_positions(result):
    buckets = {record.item_id: record.length_bucket for record in result.records}
    assert buckets == {
        "one": "20-40",
        "two": ">=40",
        "three": "<20",
        "silent": "20-40",
        "four": ">=40",
    }
    assert list(result.by_length) == ["<20", "20-40", ">=40"]
    assert result.by_length["20-40"]["hit@5"] == 0.5
    positions = {record.item_id: record.position for record in result.records}
    assert positions == {
        "one": "middle",
        "two": "first",
        "three": None,
        "silent": "last",
        "four": "middle",
    }
    assert {name: group["items"] for name, group in result.by_position.items()} == {
        "first": 1,
        "middle": 2,
        "last": 1,
    }


def test_json_round_trip(result):
    data = json.loads(result.to_json())
    assert data["overall"] == pytest.approx(result.overall)
    assert set(data["by_length"]) == {"<20", "20-40", ">=40"}
    again = EvaluationResult.from_dict(data)
    assert again.records == result.records and again.overall == result.overall


def test_chunk_retrievers_are_scored_through_their_sentences(items):
    item = items[0]  # gold: sentence 3 of fox; the whole text is one 30-word chunk
    result = evaluate(
        ScriptedRetriever({}, unit="chunk"), [item], budgets=(5, 30), ks=(1, 5), progress=False
    )
    scores = result.records[0].scores
    assert result.unit == "chunk"
    assert (scores["hit@5"], scores["hit@30"]) == (0.0, 1.0)
    assert (scores["R@1"], scores["R@5"]) == (0.0, 1.0)
    assert scores["nDCG@5"] == pytest.approx(1 / math.log2(5))


def test_bucket_labels_and_validation():
    assert LengthBuckets().labels == ["<5k", "5k-20k", "20k-50k", "50k-100k", ">=100k"]
    buckets = LengthBuckets((5_000, 20_000))
    assert [buckets.label(w) for w in (0, 4_999, 5_000, 19_999, 20_000)] == [
        "<5k",
        "<5k",
        "5k-20k",
        "5k-20k",
        ">=20k",
    ]
    assert LengthBuckets(()).label(10**6) == "all"
    assert LengthBuckets((1_500,)).labels == ["<1,500", ">=1,500"]
    for edges in [(10, 10), (20, 10), (0,), (2.5,)]:
        with pytest.raises(ValueError, match="edges"):
            LengthBuckets(edges)


def test_evidence_position_from_spans_and_metadata():
    text = "x" * 90
    document = Document("d", text)

    def item(*starts: int, **metadata: object) -> QAItem:
        spans = [GoldSpan("d", start, start + 1) for start in starts]
        return QAItem("i", "?", [document], gold_spans=spans, metadata=metadata)

    assert [evidence_position(item(s)) for s in (0, 29, 30, 59, 60, 89)] == [
        "first",
        "first",
        "middle",
        "middle",
        "last",
        "last",
    ]
    assert evidence_position(item(1, 80)) == "spread"
    assert evidence_position(item()) is None
    assert evidence_position(item(1, evidence_position=0.5)) == "middle"
    assert evidence_position(item(evidence_position="last")) == "last"
    with pytest.raises(ValueError, match="evidence_position"):
        evidence_position(item(evidence_position="end"))


def test_bad_arguments_are_rejected(items):
    retriever = ScriptedRetriever(SCRIPT)
    with pytest.raises(ValueError, match="unique"):
        evaluate(retriever, [items[0], items[0]], progress=False)
    with pytest.raises(ValueError, match="top_k"):
        evaluate(retriever, items, top_k=0, progress=False)


def test_table_context_budgets_read_a_row_with_the_lines_that_say_what_it_is(
    filing_path,
) -> None:
    """With ``table_context`` a ranked table row is read after its statement's title and
    column header, and their words count: an answer only they hold is found within the
    budget, and the row itself is pushed back by exactly their words."""
    filing = read_file(filing_path)
    texts = filing.sentence_texts()
    row = next(text for text in texts if text.startswith("Services 6,698 6,296"))
    prose = [t for t in texts if t.endswith(".") and len(t.split()) > 12 and "OPERATIONS" not in t]
    script = {"statement?": [row, *prose[:20]], "figure?": [*prose[:20], row]}
    title = "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS"
    items = [
        QAItem("statement", "statement?", [filing], answers=[title]),
        QAItem("figure", "figure?", [filing], answers=[row]),
    ]
    words = sum(len(t.split()) for t in [*prose[:20], row])
    context = sum(len(t.split()) for t in context_texts(filing, texts.index(row)))
    budgets = (words, words + context)
    plain = evaluate(ScriptedRetriever(script), items, budgets=budgets, progress=False)
    read = evaluate(
        ScriptedRetriever(script), items, budgets=budgets, progress=False, table_context=True
    )
    assert [r.scores[f"ahit@{words}"] for r in plain.records] == [0.0, 1.0]
    assert [r.scores[f"ahit@{words}"] for r in read.records] == [1.0, 0.0]
    assert read.records[1].scores[f"ahit@{words + context}"] == 1.0
