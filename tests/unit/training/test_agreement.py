"""The agreement filter over real synthetic examples: it ranks the lines of the chunk the
writer was shown, keeps an example exactly when a labelled line is among the reader's first
``max_rank``, copies kept lines unchanged and counts the rest."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from longscan.documents import Document
from longscan.readers.files import read_file
from longscan.training.agreement import DISAGREES, agreement, filter_examples, source_lines
from longscan.training.data import says_something
from longscan.training.synthetic_examples import parse_examples

TABLES = Path(__file__).parents[3] / "training-data" / "synthetic-tables" / "examples.jsonl"


def _lines(count: int) -> list[str]:
    return TABLES.read_text(encoding="utf-8").splitlines()[:count]


class _Favours:
    """A reader that scores one line's text above every other (so its choice is known)."""

    digest = "favours"

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite

    def passage(self, document: Document, index: int) -> str:
        start, end = document.sentences[index]
        return document.text[start:end]

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        return np.array([float(p == self.favourite) for p in passages], np.float32)


def test_the_labelled_lines_are_found_in_the_chunk_the_writer_was_shown(data_dir: Path) -> None:
    examples = parse_examples("\n".join(_lines(5)), str(TABLES), data_dir / "train-docs")
    for example in examples:
        source = read_file(data_dir / "train-docs" / example.source_id)
        shown, labelled = source_lines(example, source)
        ((first, last),) = example.chunks
        assert shown == list(range(first, last)) and labelled <= set(shown)
        texts = source.sentence_texts()
        assert sorted(texts[i] for i in labelled) == sorted(
            example.text[a:b] for a, b in example.labels if says_something(example.text[a:b])
        )
    moved = replace(example, source_start=example.source_start + 1)
    with pytest.raises(ValueError, match="not a sentence of its source"):
        source_lines(moved, source)


def test_an_example_is_kept_exactly_when_the_reader_ranks_a_label_first(
    data_dir: Path, tmp_path: Path
) -> None:
    (line,) = _lines(1)
    (example,) = parse_examples(line, str(TABLES), data_dir / "train-docs")
    source = read_file(data_dir / "train-docs" / example.source_id)
    shown, labelled = source_lines(example, source)
    texts = source.sentence_texts()
    others = [texts[i] for i in shown if i not in labelled]
    path = tmp_path / "one.jsonl"
    path.write_text(line + "\n", encoding="utf-8")

    agrees = _Favours(texts[max(labelled)])
    assert agreement(example, source, agrees).rank == 1
    kept, report = filter_examples([path], agrees, sources=data_dir / "train-docs")
    assert kept == [line]  # byte for byte: a packed line stays packed
    assert report.kept == {"table": 1} and report.dropped == {}

    disagrees = _Favours(others[0])
    verdict = agreement(example, source, disagrees)
    assert verdict.rank == 2 and verdict.lines == len(shown)
    kept, report = filter_examples([path], disagrees, sources=data_dir / "train-docs")
    assert kept == [] and report.dropped == {"table": {DISAGREES: 1}}
    assert report.ranks == {example.id: 2}
    kept, _ = filter_examples([path], disagrees, max_rank=2, sources=data_dir / "train-docs")
    assert kept == [line]
    with pytest.raises(ValueError, match="max_rank"):
        filter_examples([path], disagrees, max_rank=0)
    unpacked = tmp_path / "unpacked.jsonl"
    unpacked.write_text(example.to_json() + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unpacked.jsonl:1: not packed"):
        filter_examples([unpacked], agrees, sources=data_dir / "train-docs")


def test_the_command_writes_the_kept_lines_and_a_report_with_the_shipped_reader(
    data_dir: Path, tmp_path: Path
) -> None:
    """End to end with the shipped re-scorer: every example is ranked, the counts add up,
    and the kept file reads back as examples."""
    from typer.testing import CliRunner

    from longscan.cli import app

    source = tmp_path / "tables.jsonl"
    source.write_text("\n".join(_lines(6)) + "\n", encoding="utf-8")
    out = tmp_path / "agreed.jsonl"
    args = ["synth-agree", str(source), "--out", str(out), "--max-rank", "2"]
    result = CliRunner().invoke(app, [*args, "--sources", str(data_dir / "train-docs")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "agreed.jsonl.report.json").read_text(encoding="utf-8"))
    assert len(report["ranks"]) == 6 and report["max_rank"] == 2
    dropped = sum(sum(reasons.values()) for reasons in report["dropped"].values())
    kept = out.read_text(encoding="utf-8").splitlines()
    assert len(kept) == report["kept"].get("table", 0) and len(kept) + dropped == 6
    assert len(kept) == sum(1 <= rank <= 2 for rank in report["ranks"].values())
    assert set(kept) <= set(_lines(6))
    parse_examples("\n".join(kept), str(out), data_dir / "train-docs")
    absent = str(tmp_path / "none.jsonl")
    missing = CliRunner().invoke(app, ["synth-agree", absent, "--out", str(out)])
    assert missing.exit_code != 0 and "none.jsonl" in missing.output
