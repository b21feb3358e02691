"""Questions reworded for training: what a rewording must keep and change, on the packaged
table examples, and a run of the command with the real local model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.cli import app
from longscan.training.reword import Dropped, checked_rewording, copied_terms, copied_words
from longscan.training.synthetic_examples import SyntheticExample, read_examples

TABLES = Path(__file__).parents[3] / "training-data" / "synthetic-tables" / "examples.jsonl"


@pytest.fixture(scope="module")
def funds() -> tuple[SyntheticExample, list[str]]:
    """A packaged example asking for a row's figure in the row's own words."""
    example = next(e for e in read_examples(TABLES) if e.id == "table-20-6")
    return example, [example.text[start:end] for start, end in example.labels]


def test_the_words_a_question_copied_from_its_lines_are_found(funds) -> None:
    example, lines = funds
    assert example.question == "What is the total amount of money market funds in September 2024?"
    assert lines[0].startswith("Money market funds")
    assert copied_terms(example.question, lines, example.question) == {"money", "market", "fund"}
    assert copied_words(example.question, lines) == ["money", "market", "funds"]  # as written


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        (
            "How much did the company hold in funds that buy short-term debt in September 2024?",
            "How much did the company hold in funds that buy short-term debt in September 2024?",
        ),
        (
            'Reworded question: "How much cash sat in short-term debt funds in September 2024?"\n'
            "This keeps the period.",
            "How much cash sat in short-term debt funds in September 2024?",
        ),
    ],
)
def test_a_rewording_in_other_words_that_keeps_the_period_is_kept(funds, reply, kept) -> None:
    example, lines = funds
    assert checked_rewording(example.question, reply, lines) == kept


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("How much did the company keep in short-term debt funds?", "a number of the question"),
        ("In September 2024, what was the total of the money market funds?", "no copied word"),
        ("The money market funds in September 2024.", "not a question"),
        ("What is the total amount of money market funds in September 2024?", "unchanged"),
        ("What " + "very " * 40 + "much was held in September 2024?", "too long"),
    ],
)
def test_a_rewording_that_loses_the_question_or_keeps_its_words_is_dropped(
    funds, reply: str, reason: str
) -> None:
    example, lines = funds
    with pytest.raises(Dropped, match=reason):
        checked_rewording(example.question, reply, lines)


def test_the_command_rewords_with_the_local_model_and_keeps_the_labels(
    local_llm_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "reworded.jsonl"
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["synth-reword", str(TABLES), "--out", str(out), "--count", "4"]
        + ["--llm", local_llm_url, "--llm-model", "local"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.with_name(out.name + ".report.json").read_text())
    assert report["attempts"] == 4 == report["kept"] + sum(report["dropped"].values())
    originals = {e.id: e for e in read_examples(TABLES)}
    for example in read_examples(out):  # every kept line reads back, labels checked
        before = originals[example.id.removesuffix("-reworded")]
        assert example.labels == before.labels and example.text == before.text
        assert example.question != before.question
        lines = [example.text[start:end] for start, end in example.labels]
        assert checked_rewording(before.question, example.question, lines) == example.question
