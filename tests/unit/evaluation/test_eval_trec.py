"""TREC run and qrels files reproduce the evaluation's own scores in another tool, and the
paired tests separate a real difference from none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import ir_measures
import pytest
from typer.testing import CliRunner

from longscan.bench.runner import run_benchmark
from longscan.cli import app
from longscan.evaluation.significance import paired_test
from longscan.evaluation.trec import run_paths, trec_id


@pytest.fixture(scope="module")
def run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("trec")
    return run_benchmark(
        "hotpotqa-long",
        ["bm25-chunk", "bm25-sentence"],
        target_words=3_000,
        max_items=12,
        progress=False,
        run_file=folder / "runs.txt",
        qrels_file=folder / "qrels.txt",
    ), folder


def test_a_run_file_gives_ir_measures_the_scores_the_evaluation_reports(run) -> None:
    benchmark, folder = run
    qrels = list(ir_measures.read_trec_qrels(str(folder / "qrels.txt")))
    assert qrels and {q.query_id for q in qrels} == {
        trec_id(r.item_id) for r in benchmark.results[0].records
    }
    for result in benchmark.results:
        path = run_paths(folder / "runs.txt", ["bm25-chunk", "bm25-sentence"])[result.retriever]
        lines = path.read_text(encoding="utf-8").splitlines()
        assert all(len(line.split()) == 6 and line.endswith(result.retriever) for line in lines)
        measures = [ir_measures.parse_measure(name) for name in ("R@10", "nDCG@10", "P@5")]
        theirs = {
            (m.query_id, str(m.measure)): m.value
            for m in ir_measures.iter_calc(measures, qrels, ir_measures.read_trec_run(str(path)))
        }
        for record in result.records:
            for name in ("R@10", "nDCG@10", "P@5"):
                key = (trec_id(record.item_id), str(ir_measures.parse_measure(name)))
                assert theirs.get(key, 0.0) == pytest.approx(record.scores[name]), key


def test_paired_tests_stand_beside_the_comparison(run) -> None:
    benchmark, _ = run
    first, second = benchmark.results
    assert benchmark.significance and {t.other for t in benchmark.significance} == {
        second.retriever
    }
    assert all(0 < t.p_value <= 1 for t in benchmark.significance)
    assert "vs bm25-chunk" in benchmark.markdown
    same = paired_test(first, first, "FR@300")
    assert same is not None and same.p_value == 1.0 and same.difference == 0
    better = dataclasses.replace(
        first,
        records=[
            dataclasses.replace(r, scores={**r.scores, "FR@300": r.scores["FR@300"] + 0.5})
            for r in first.records
        ],
    )
    shifted = paired_test(first, better, "FR@300")
    assert shifted.difference == pytest.approx(0.5) and shifted.p_value < 0.01


def test_eval_writes_the_files_it_is_asked_for(data_dir: Path, tmp_path: Path) -> None:
    asked = ["eval", "-b", "musique-long", "-r", "bm25-sentence", "--target-words", "2000",
             "--max-items", "3", "--run-file", str(tmp_path / "run.txt"),
             "--qrels", str(tmp_path / "qrels.txt")]  # fmt: skip
    result = CliRunner().invoke(app, asked)
    assert result.exit_code == 0, result.output
    run = list(ir_measures.read_trec_run(str(tmp_path / "run.txt")))
    assert {r.query_id for r in run} == {
        q.query_id for q in ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt"))
    }
