"""The filings development split: figures read off real statement rows, asked three ways,
over reports that no training example touches."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from longscan.bench.catalogue import build_benchmark
from longscan.bench.datasets import financial_name
from longscan.bench.filings import (
    HELD_OUT_FILINGS,
    StatementFigure,
    figure_spans,
    registrant,
    statement_figures,
)
from longscan.training.synthetic_examples import (
    SyntheticExample,
    outside_held_out,
    read_training_examples,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def items(data_dir: Path):
    return build_benchmark("filings", data_dir=data_dir)


def test_every_gold_span_is_the_answer_figure_in_the_report_asked_about(items) -> None:
    assert len(items) >= 100
    for item in items:
        (report,) = item.gold_doc_ids
        assert len(item.documents) == 3 and report in {d.id for d in item.documents}
        assert item.gold_spans and {span.doc_id for span in item.gold_spans} == {report}
        text = item.document(report).text
        digits = item.answers[0].strip("()")
        assert all(text[s.start : s.end] == digits for s in item.gold_spans)
        start, end = item.metadata["row"]
        row = text[start:end]  # the row it was read from: its label, then its figures
        assert digits in row and re.fullmatch(r"[\d,.()—]+", row.split()[-1])


def test_each_figure_is_asked_in_the_rows_words_by_its_name_and_in_other_words(items) -> None:
    by_figure: dict[str, dict[str, str]] = {}
    for item in items:
        key = item.id.rsplit(":", 1)[0]
        by_figure.setdefault(key, {})[item.metadata["phrasing"]] = item.query
    assert all(set(asked) == {"label", "concept", "paraphrase"} for asked in by_figure.values())
    for asked in by_figure.values():
        label = re.search(r"'(.+)'", asked["label"]).group(1)
        assert label.lower() not in asked["paraphrase"].lower()
    dated = [item for item in items if item.metadata["phrasing"] != "concept"]
    assert all(str(item.metadata["year"]) in item.query for item in dated)


def test_the_figure_is_the_latest_years_column_of_a_real_statement(data_dir: Path) -> None:
    text = (data_dir / "train-docs/sec-full-filings/amzn_amzn-10-k-2025-02-07.txt").read_text()
    figures = {f.item.key: f for f in statement_figures(text)}
    assert registrant(text) == "Amazon.Com, Inc."
    # Amazon prints its years oldest first: the 2024 column is the last one
    revenue: StatementFigure = figures["revenue"]
    assert (revenue.year, revenue.figure) == (2024, "637,959")
    assert figures["net_income"].figure == "59,248"  # not the 2022 loss of ( 2,722 )
    assert figures["total_assets"].period == "2024"


def test_a_quarterly_balance_is_dated_and_a_parent_company_schedule_is_not_read(
    data_dir: Path,
) -> None:
    folder = data_dir / "train-docs/sec-full-filings"
    xom = {f.item.key: f for f in statement_figures((folder / HELD_OUT_FILINGS[7]).read_text())}
    assert xom["total_assets"].period == "June 30, 2025"
    # its only "net income" row with two columns belongs to a merger table under another
    # table's header, and is left out rather than misread
    assert "net_income" not in xom
    gainsco = (folder / HELD_OUT_FILINGS[0]).read_text()
    parent_total_assets = "107,064"  # Schedule II, the parent company alone
    assert parent_total_assets in gainsco
    assert all(f.figure != parent_total_assets for f in statement_figures(gainsco))


def test_figure_spans_are_whole_numbers() -> None:
    text = "Total 1,659 and 11,659 and 1,659.5 and (1,659) end 1,659,000"
    assert figure_spans(text, "(1,659)") == [(6, 11), (40, 45)]


def _sources(folder: str) -> set[str]:
    path = REPO / "training-data" / folder / "examples.jsonl"
    return {Path(json.loads(line)["source"]).name for line in path.open()}


def test_no_training_run_reads_a_held_out_report() -> None:
    """The split is fair to the shipped scanner, whose synthetic examples never name these
    reports; the table examples do, and every training run drops them."""
    assert not _sources("synthetic-filings") & set(HELD_OUT_FILINGS)
    assert _sources("synthetic-tables") & set(HELD_OUT_FILINGS)

    def example(source: str) -> SyntheticExample:
        return SyntheticExample(
            id=source,
            strategy="table",
            question="What was it?",
            text="A sentence.",
            labels=[(0, 11)],
            source_id=source,
            source_start=0,
            chunks=[(0, 1)],
        )

    kept = outside_held_out(
        [example(f"sec-full-filings/{HELD_OUT_FILINGS[3]}"), example("cuad/other.txt")]
    )
    assert [e.source_id for e in kept] == ["cuad/other.txt"]


def test_the_loong_variant_reads_one_report_per_filer_named_as_loong_names_it(
    data_dir: Path,
) -> None:
    items = build_benchmark("filings-loong", data_dir=data_dir)
    assert len(items) >= 30
    for item in items:
        filers = [financial_name(document.id) for document in item.documents]
        assert len(set(filers)) == len(filers) == 3  # never two reports of one filer
        (report,) = item.gold_doc_ids
        assert financial_name(report) in item.query
        digits = item.answers[0].strip("()")
        assert all(item.document(report).text[s.start : s.end] == digits for s in item.gold_spans)


def test_every_training_run_reads_packed_examples_without_the_held_out_reports(
    tmp_path: Path,
) -> None:
    """The table examples' file holds lines over held-out reports; the reader that the
    scanner's, the re-scorer's and the token-level scanner's training share leaves them out."""
    lines = (REPO / "training-data/synthetic-tables/examples.jsonl").read_text().splitlines()
    held = next(line for line in lines if Path(json.loads(line)["source"]).name in HELD_OUT_FILINGS)
    kept = next(
        line for line in lines if Path(json.loads(line)["source"]).name not in HELD_OUT_FILINGS
    )
    path = tmp_path / "examples.jsonl"
    path.write_text(f"{held}\n{kept}\n", encoding="utf-8")
    (example,) = read_training_examples(path)
    assert example.id == json.loads(kept)["id"]
