"""Questions that name the filer: the name comes from a real cover page, the copy keeps the
example's labels and text, and sources without a cover give no copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longscan.training.named import NAMED_SUFFIX, filer_name, named_copies, naming
from longscan.training.synthetic import read_examples

SHIPPED_FILINGS = Path(__file__).parents[3] / "training-data" / "synthetic-filings"


@pytest.mark.parametrize(
    ("filing", "name"),
    [
        ("aapl_aapl-10-q-2025-08-01.txt", "Apple Inc."),
        ("10-K_0001193125-10-073212.txt", "GAINSCO, INC."),
        ("20-F_0001062993-16-008650.txt", "LONCOR RESOURCES INC."),
    ],
)
def test_the_filer_is_read_from_a_real_cover_page(data_dir: Path, filing: str, name: str) -> None:
    text = (data_dir / "train-docs" / "sec-full-filings" / filing).read_text(encoding="utf-8")
    assert filer_name(text) == name


def test_a_contract_and_a_prospectus_have_no_filer(data_dir: Path) -> None:
    docs = data_dir / "train-docs"
    contract = next((docs / "cuad").glob("*.txt"))
    prospectus = docs / "sec-full-filings" / "data_Flushing-424B4.txt"
    for path in (contract, prospectus):
        assert filer_name(path.read_text(encoding="utf-8")) is None, path.name


def test_naming_keeps_the_question_and_adds_the_name() -> None:
    question = "What were the total revenues in 2024?"
    phrasings = {naming(question, "Tesla, Inc.", f"example-{i}") for i in range(30)}
    assert phrasings == {
        "For Tesla, Inc., what were the total revenues in 2024?",
        "What were the total revenues in 2024 of Tesla, Inc.?",
        "Tesla, Inc.: What were the total revenues in 2024?",
    }
    assert naming(question, "Tesla, Inc.", "x") == naming(question, "Tesla, Inc.", "x")
    assert naming("Revenue by segment", "Tesla", "example-1").endswith("Revenue by segment")


def shipped_lines() -> list[tuple[str, dict[str, Any]]]:
    """The shipped filings examples' packed lines, each with its decoded JSON."""
    lines = (SHIPPED_FILINGS / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    return [(line, json.loads(line)) for line in lines]


def packed_file(tmp_path: Path, lines: list[str]) -> Path:
    """A file of some shipped lines (reading all 2,636 back takes a minute)."""
    path = tmp_path / "chosen.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def is_filing(raw: dict[str, Any]) -> bool:
    return raw["source"].startswith("sec-full-filings/")


def test_named_copies_of_the_shipped_examples(data_dir: Path, tmp_path: Path) -> None:
    filings = [line for line, raw in shipped_lines() if is_filing(raw)]
    others = [line for line, raw in shipped_lines() if not is_filing(raw)][:20]
    path = packed_file(tmp_path, filings + others)  # 20 contracts and risk-factor sections
    examples = read_examples(path, data_dir / "train-docs")
    copies, unnamed = named_copies(examples, data_dir / "train-docs")
    by_id = {example.id: example for example in examples}
    assert copies, "the shipped filings examples include 10-K and 10-Q spans"
    assert unnamed > 0  # contracts and risk-factor sections have no cover page
    assert len(copies) + unnamed <= len(examples)
    for copy in copies:
        original = by_id[copy.id.removesuffix(NAMED_SUFFIX)]
        assert copy.id.endswith(NAMED_SUFFIX)
        assert (copy.text, copy.labels, copy.source_id) == (
            original.text,
            original.labels,
            original.source_id,
        )
        assert copy.question != original.question
        source = (data_dir / "train-docs" / copy.source_id).read_text(encoding="utf-8")
        name = filer_name(source)
        assert name is not None and name in copy.question
        assert name.casefold() not in original.question.casefold()


def test_train_mixes_in_the_named_copies_and_says_so(data_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from longscan.cli import app

    short = [  # ten filing spans under 3,000 words: seconds to encode
        line
        for line, raw in shipped_lines()
        if is_filing(raw) and raw["source_end"] - raw["source_start"] < 18_000
    ][:10]
    path = packed_file(tmp_path, short)
    copies, unnamed = named_copies(read_examples(path), data_dir / "train-docs")
    assert len(copies) >= 5
    out = tmp_path / "named"
    result = CliRunner().invoke(
        app,
        ["train", "--out", str(out), "--datasets", "", "--synthetic", str(path),
         "--named-synthetic", str(path), "--named-synthetic", str(path),
         "--d-model", "32", "--layers", "1", "--threads", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "training.json").read_text())["train_manifest"]
    named = manifest["named"]  # a file named twice weighs twice
    assert 0 < named <= 2 * len(copies) and named % 2 == 0
    assert manifest["named_without_filer"] == 2 * unnamed
    assert manifest["examples"] > named  # the originals are trained on too
    card = (out / "MODEL_CARD.md").read_text()
    assert f"Of them, {named} are copies whose question names the filer" in card
