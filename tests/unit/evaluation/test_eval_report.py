from __future__ import annotations

import json

import pytest
from rich.console import Console

from longscan.evaluation.evaluator import EvaluationResult, ItemRecord
from longscan.evaluation.report import (
    comparison_rows,
    comparison_table,
    length_figure,
    markdown_table,
    plot_by_length,
    read_json,
    result_table,
    select_measures,
    write_json,
)

MEASURES = ["hit@100", "nDCG@10", "docR@1"]


def _result(name: str, hits: tuple[float, float]) -> EvaluationResult:
    records = [
        ItemRecord("a", 1_000, 1, "<5k", "first", 0.5, 10, {"hit@100": hits[0], "nDCG@10": 0.5}),
        ItemRecord("b", 9_000, 2, "5k-20k", "last", 1.5, 10, {"hit@100": hits[1]}),
    ]
    return EvaluationResult(name, "sentence", MEASURES, (5_000, 20_000), records)


@pytest.fixture
def results() -> list[EvaluationResult]:
    return [_result("bm25", (1.0, 0.0)), _result("dense", (1.0, 1.0))]


def test_columns_skip_measures_that_scored_nothing(results):
    assert select_measures(results) == ["hit@100", "nDCG@10"]
    assert select_measures(results, ["docR@1"]) == ["docR@1"]
    with pytest.raises(ValueError):
        select_measures(results, ["bogus"])


def test_markdown_table_has_one_row_per_retriever(results):
    # s/doc = 2 s / 3 documents; words/s = 10,000 words / 2 s.
    assert markdown_table(results) == (
        "| retriever | items | hit@100 | nDCG@10 | s/doc | words/s |\n"
        "| :--- | ---: | ---: | ---: | ---: | ---: |\n"
        "| bm25 | 2 | 0.500 | 0.500 | 0.667 | 5,000 |\n"
        "| dense | 2 | 1.000 | 0.500 | 0.667 | 5,000 |\n"
    )
    header, rows = comparison_rows(results, ["docR@1"])
    assert header[2] == "docR@1" and rows[0][2] == "–"


def test_rich_tables_render(results):
    console = Console(record=True, width=200)
    table = comparison_table(results)
    assert table.row_count == 2
    console.print(table)
    console.print(result_table(results[0]))
    text = console.export_text()
    assert "dense" in text and "length 5k-20k" in text and "evidence last" in text


def test_json_and_plot_files(results, tmp_path):
    settings = {"benchmark": "squad-long", "seed": 3, "command": "longscan eval -b squad-long"}
    path = write_json(results, tmp_path / "out" / "results.json", settings)
    data = json.loads(path.read_text())
    assert [entry["retriever"] for entry in data["results"]] == ["bm25", "dense"]
    assert data["settings"]["seed"] == 3 and data["settings"]["versions"]["torch"]
    read_settings, read = read_json(path)
    assert read_settings == data["settings"] and read[1].overall == results[1].overall
    (tmp_path / "old.json").write_text(json.dumps(data["results"]))  # before settings
    assert read_json(tmp_path / "old.json")[1][0].overall == results[0].overall

    png = plot_by_length(results, tmp_path / "plots" / "by_length.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_rejects_mixed_buckets(results, tmp_path):
    other = _result("other", (0.0, 0.0))
    other.length_edges = (1_000,)
    with pytest.raises(ValueError, match="length buckets"):
        plot_by_length([*results, other], tmp_path / "x.png")
    with pytest.raises(ValueError, match="no results"):
        plot_by_length([], tmp_path / "x.png")


def test_a_run_of_one_length_plots_a_bar_per_retriever():
    one_length = [
        EvaluationResult(name, "sentence", MEASURES, (5_000, 20_000), [
            ItemRecord("a", 9_000, 1, "5k-20k", "first", 0.5, 10, {"hit@100": hit}),
            ItemRecord("b", 9_500, 1, "5k-20k", "last", 0.5, 10, {"hit@100": hit}),
        ])
        for name, hit in (("bm25", 0.5), ("scanner", 1.0))
    ]  # fmt: skip
    panel = length_figure(one_length).axes[0]
    assert [bar.get_height() for bar in panel.patches] == [0.5, 1.0]
    assert [tick.get_text() for tick in panel.get_xticklabels()] == ["bm25", "scanner"]
    assert "5k-20k" in panel.get_title()
    two_lengths = length_figure([_result("bm25", (1.0, 0.0))]).axes[0]
    assert not two_lengths.patches and len(two_lengths.lines) == 1
