"""The contract development split: held-out contracts chosen by name, writers' replies
checked against the text, and items whose gold is where the answer is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscan.bench.catalogue import build_benchmark
from longscan.bench.contracts import (
    CONTRACTS_DIR,
    HELD_OUT_CONTRACTS,
    PASSAGE_SENTENCES,
    QUESTIONS_FILE,
    Unchecked,
    answer_spans,
    build_contracts,
    checked_question,
    is_held_out,
    passages,
    title_of,
)
from longscan.evaluation.gold import normalize_answer
from longscan.training.synthetic_examples import read_training_examples

REPO = Path(__file__).resolve().parents[3]
FUELCELL = HELD_OUT_CONTRACTS[3]


@pytest.fixture(scope="module")
def fuelcell(data_dir: Path) -> str:
    return (data_dir / CONTRACTS_DIR / FUELCELL).read_text(encoding="utf-8")


def test_the_held_out_contracts_are_the_tenth_the_name_rule_picks(data_dir: Path) -> None:
    names = sorted(path.name for path in (data_dir / CONTRACTS_DIR).glob("*.txt"))
    assert len(names) == 126
    assert tuple(name for name in names if is_held_out(name)) == HELD_OUT_CONTRACTS
    assert title_of(FUELCELL) == "Development Agreement"
    assert title_of("MetLife_Inc._-_Remarketing_Agreement.txt") == "Remarketing Agreement"


def test_passages_cover_the_contract_without_overlapping(fuelcell: str) -> None:
    found = passages(fuelcell, 8, seed=0)
    assert len(found) == 8 and all(len(p) == PASSAGE_SENTENCES for p in found)
    starts = [p[0][0] for p in found]
    assert starts == sorted(starts)
    assert all(a[-1][1] <= b[0][0] for a, b in zip(found, found[1:], strict=False))
    assert starts[-1] > len(fuelcell) // 2  # spread over the text, not its first pages
    assert passages(fuelcell, 8, seed=0) == found
    with pytest.raises(ValueError, match="hold no"):
        passages(fuelcell[:2_000], 8)


ASSIGNMENT = [
    "ARTICLE 14 - ASSIGNMENT",
    "The Agreement is not assignable, including any assignment by operation of law, by "
    "either Party without the prior written consent of the other Party.",
    "Any assignee permitted in Paragraph 14.01 (Assignment) will agree in writing to be "
    "bound by all the obligations of the assigning Party within thirty (30) days.",
]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (  # field names in bold, the sentence named in brackets
            "**Question:** Within how long must an assignee agree to be bound?\n"
            "**Answer:** thirty (30) days\n**Sentence:** [3]",
            ("Within how long must an assignee agree to be bound?", "thirty (30) days", 2),
        ),
        (  # the answer's case and spacing differ from the sentence's
            "Question: What consent does an assignment need?\nAnswer: Prior  Written consent.\n"
            "Sentence: 2",
            ("What consent does an assignment need?", "prior written consent", 1),
        ),
        (  # a writer's reply seen in a trial: a section number for the sentence
            "Question: Who can assign this Agreement?\nAnswer: either Party\nSentence: 15.01",
            "no sentence of the passage named",
        ),
        (  # seen too: the answer joins words that no sentence holds together
            "Question: Who can assign this Agreement?\nAnswer: ExxonMobil and FCE\nSentence: [2]",
            "answer not in the sentence named",
        ),
        (
            "Question: Is the Agreement assignable without consent?\nAnswer: not assignable\n"
            "Sentence: 4",
            "no sentence of the passage named",
        ),
        ("Question: What does Article 14 say\nAnswer: assignment\nSentence: 1", "no question"),
        ("The Agreement is not assignable.", "no question"),
        ("Question: What needs the other Party's consent?\nSentence: 2", "no answer"),
        (
            "Question: What needs the other Party's prior written consent?\n"
            "Answer: prior written consent\nSentence: 2",
            "the question holds its answer",
        ),
        (
            "Question: What does the Agreement say about assignment?\nAnswer: The Agreement is "
            "not assignable, including any assignment by operation of law, by either Party\n"
            "Sentence: 2",
            "answer too long",
        ),
    ],
)
def test_a_writers_reply_is_kept_only_when_its_answer_is_where_it_says(
    reply: str, expected: tuple[str, str, int] | str
) -> None:
    contract = " ".join(ASSIGNMENT)
    if isinstance(expected, tuple):
        assert checked_question(reply, ASSIGNMENT, contract) == expected
    else:
        with pytest.raises(Unchecked, match=expected):
            checked_question(reply, ASSIGNMENT, contract)


def test_an_answer_the_contract_repeats_everywhere_is_not_specific(fuelcell: str) -> None:
    reply = "Question: Whose consent does an assignment need?\nAnswer: the other Party\nSentence: 2"
    assert len(answer_spans(fuelcell, "the other Party")) > 3
    with pytest.raises(Unchecked, match="not specific"):
        checked_question(reply, ASSIGNMENT, fuelcell)


def test_answer_spans_are_whole_words_with_any_spacing() -> None:
    text = "within thirty (30)\ndays; not thirty (30) daysless nor Thirty (30) Days."
    last = text.index("Thirty")
    assert answer_spans(text, "thirty (30) days") == [(7, 23), (last, last + 16)]


def test_no_training_run_reads_a_held_out_contract(tmp_path: Path) -> None:
    """The shipped scanner was trained before these contracts were held out; every
    training run since drops the examples drawn from them."""
    lines = (REPO / "training-data/synthetic-filings/examples.jsonl").read_text().splitlines()
    held = [line for line in lines if Path(json.loads(line)["source"]).name in HELD_OUT_CONTRACTS]
    assert held
    path = tmp_path / "examples.jsonl"
    path.write_text("\n".join(held[:3] + lines[:5]) + "\n", encoding="utf-8")
    sources = {Path(e.source_id).name for e in read_training_examples(path)}
    assert sources and not sources & set(HELD_OUT_CONTRACTS)


def test_every_stored_question_reads_its_answer_where_its_gold_is(data_dir: Path) -> None:
    items = build_benchmark("contracts", data_dir=data_dir)
    assert len(items) >= 20
    assert {item.metadata["phrasing"] for item in items} == {"written", "reworded"}
    for item in items:
        (contract,) = item.gold_doc_ids
        assert contract in HELD_OUT_CONTRACTS and len(item.documents) == 3
        text = item.document(contract).text
        assert all(
            normalize_answer(text[span.start : span.end]) == normalize_answer(item.answers[0])
            for span in item.gold_spans
        )
        start, end = item.metadata["sentence"]
        assert any(start <= span.start and span.end <= end for span in item.gold_spans)
        assert not answer_spans(item.query, item.answers[0])


def test_a_contract_that_changed_since_its_questions_were_written_is_refused(
    data_dir: Path, tmp_path: Path
) -> None:
    first = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8").splitlines()[0])
    moved = tmp_path / "questions.jsonl"
    moved.write_text(json.dumps({**first, "sha256": "0" * 64}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="differs"):
        build_contracts(data_dir=data_dir, questions_file=moved)
    moved.write_text(json.dumps({**first, "sentence": [0, 1]}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not in its sentence"):
        build_contracts(data_dir=data_dir, questions_file=moved)
