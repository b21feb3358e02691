"""Judge parsers on real-looking and malformed outputs; deterministic answer scores."""

from __future__ import annotations

import pytest

from longscan.evaluation.answers import (
    Verdict,
    choice_accuracy,
    exact_match,
    extract_choices,
    parse_embs_score,
    parse_loong_score,
    parse_yes_no,
    sub_em,
    summarize_verdicts,
    token_f1,
)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Yes", 1.0),
        ("yes.", 1.0),
        ("No, the answer names the wrong year.", 0.0),
        ("**Yes** - it matches the reference.", 1.0),
        ("The model answer is correct.\nyes", 1.0),
        ("Yes and no: partly right.", None),
        ("", None),
        ("I cannot judge this.", None),
        ("Nope", None),
    ],
)
def test_yes_no(output: str, expected: float | None) -> None:
    assert parse_yes_no(output) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("The answer misses two companies. Rating: [[40]]", 40.0),
        ("[[100]]", 100.0),
        ("Score: [[ 87.5 ]] because ...", 87.5),
        ("First [[30]] then corrected to [[60]]", 30.0),  # Loong reads the first
        ("Rating: 75", None),  # no double brackets
        ("[[0]]", None),  # outside 1-100
        ("[[150]]", None),
        ("[75]", None),
    ],
)
def test_loong_score(output: str, expected: float | None) -> None:
    assert parse_loong_score(output) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Score: 4. Correct but omits the date.", 4.0),
        ("score=5", 5.0),
        ("Score: **3**/5 partly correct", 3.0),
        ("2", 2.0),
        ("Score: 7", None),
        ("The answer is good.", None),
    ],
)
def test_embs_score(output: str, expected: float | None) -> None:
    assert parse_embs_score(output) == expected


def test_parse_failures_are_counted_not_scored() -> None:
    verdicts = [Verdict(100.0, "[[100]]"), Verdict(50.0, "[[50]]"), Verdict(None, "garbage")]
    summary = summarize_verdicts(verdicts, perfect=100)
    assert summary["mean"] == 75.0 and summary["perfect_rate"] == 0.5
    assert summary["parse_failure_rate"] == pytest.approx(1 / 3) and summary["parsed"] == 2
    assert summarize_verdicts([Verdict(None, "x")])["mean"] is None


def test_token_f1_em_and_subem_follow_squad_normalisation() -> None:
    assert token_f1("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert token_f1("the big red tower", ["red tower", "blue"]) == pytest.approx(0.8)  # P 2/3, R 1
    assert token_f1("nothing", ["tower"]) == 0.0
    assert exact_match("An apple!", ["apple"]) == 1.0 and exact_match("apples", ["apple"]) == 0.0
    assert sub_em("It was built in 1889 in Paris.", ["1889"]) == 1.0
    assert sub_em("It was built long ago.", ["1889", ""]) == 0.0


@pytest.mark.parametrize(
    ("output", "letters"),
    [
        ("C", {"C"}),
        ("C. Answer questions using data", {"C"}),
        ("The answer is B.", {"B"}),
        ("Answer: A, C and D", {"A", "C", "D"}),
        ("ABD", {"A", "B", "D"}),
        ("(C)", {"C"}),
        ("I think it is about data.", None),
    ],
)
def test_choices(output: str, letters) -> None:
    assert extract_choices(output) == (frozenset(letters) if letters else None)


def test_choice_accuracy_needs_exactly_the_gold_letters() -> None:
    assert choice_accuracy("The answer is ABD", "ABD") == 1.0
    assert choice_accuracy("Answer: A, B, D", "ABD") == 1.0
    assert choice_accuracy("The answer is AB", "ABD") == 0.0
    assert choice_accuracy("B", "C") == 0.0
