"""Run named retrievers on a named benchmark and write JSON, markdown and a plot.

The CLI's ``longscan eval`` and the scripts in ``benchmarks/`` both call ``run_benchmark``, so
a number in BENCHMARKS.md is reproduced by the command printed next to it.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from longscan.bench.catalogue import build_benchmark
from longscan.evaluation import EvaluationResult, evaluate
from longscan.evaluation.report import (
    headline_measures,
    markdown_table,
    plot_by_length,
    significance_markdown,
    write_json,
)
from longscan.evaluation.significance import PairedTest, against_first
from longscan.evaluation.trec import run_paths, write_qrels, write_run
from longscan.items import QAItem, instructed_query
from longscan.retrievers import OracleRetriever, get_retriever
from longscan.retrievers.base import Retriever


@dataclass(frozen=True)
class BenchmarkRun:
    """What ``run_benchmark`` produced: the results, the paired tests of each retriever
    against the first (on the headline measures), and the files written."""

    benchmark: str
    results: list[EvaluationResult]
    markdown: str
    files: list[Path]
    significance: list[PairedTest] = field(default_factory=list)


def make_retriever(name: str, items: Sequence[QAItem]) -> Retriever:
    """A retriever by name; ``oracle`` and ``oracle-chunk`` are built from the items' gold."""
    if name in ("oracle", "oracle-sentence"):
        return OracleRetriever(items, "sentence")
    if name == "oracle-chunk":
        return OracleRetriever(items, "chunk")
    return get_retriever(name)  # also scanner:DIR, another checkpoint


def run_benchmark(
    benchmark: str,
    retrievers: Sequence[str],
    *,
    split: str = "dev",
    target_words: int = 20_000,
    max_items: int | None = None,
    seed: int = 0,
    out_dir: Path | None = None,
    progress: bool = True,
    table_context: bool = False,
    instruction: str | None = None,
    run_file: Path | None = None,
    qrels_file: Path | None = None,
) -> BenchmarkRun:
    """Build ``benchmark`` items and evaluate each retriever on exactly the same items
    (``table_context``: budgets count each table row's context units, see ``evaluate``;
    ``instruction``: asked before every query and a blank line, as a prompt would, to
    measure how a retriever reads a query that carries one). ``run_file`` and
    ``qrels_file`` write TREC files of the sentence rankings and the gold
    (``evaluation.trec``)."""
    if not retrievers:
        raise ValueError("name at least one retriever")
    if instruction is not None and not instruction.strip():
        raise ValueError("the instruction is empty: leave it out to ask the plain queries")
    items = build_benchmark(
        benchmark, split=split, target_words=target_words, max_items=max_items, seed=seed
    )
    if not items:
        raise ValueError(f"{benchmark}: no items were built")
    if instruction is not None:
        asked = instruction.strip()
        items = [replace(item, query=instructed_query(asked, item.query)) for item in items]
    results = []
    for name in retrievers:
        retriever = make_retriever(name, items)
        retriever.name = name  # progress bars and reports show the registry name
        result = evaluate(retriever, items, progress=progress, table_context=table_context)
        result.retriever = name
        results.append(result)
    tests = against_first(results, headline_measures(results))
    markdown = markdown_table(results)
    if tests:
        markdown += "\n" + significance_markdown(tests)
    files: list[Path] = []
    if run_file is not None:
        paths = run_paths(run_file, [result.retriever for result in results])
        files += [write_run(result, paths[result.retriever]) for result in results]
    if qrels_file is not None:
        files.append(write_qrels(items, qrels_file))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        length = f"{target_words // 1000}k" if target_words % 1000 == 0 else f"{target_words}w"
        stem = f"{benchmark}-{length}"  # 800 words was "-0k", and 1,500 "-1k"
        settings = {
            "benchmark": benchmark, "retrievers": list(retrievers), "split": split,
            "target_words": target_words, "max_items": max_items, "seed": seed,
            "table_context": table_context, "instruction": instruction,
            "items": [item.id for item in items],
            "command": shlex.join(sys.argv),
            "significance": [asdict(test) for test in tests],
        }  # fmt: skip
        files.append(write_json(results, out_dir / f"{stem}.json", settings))
        (out_dir / f"{stem}.md").write_text(markdown + "\n")
        files.append(out_dir / f"{stem}.md")
        files.append(plot_by_length(results, out_dir / f"{stem}.png"))
    return BenchmarkRun(benchmark, results, markdown, files, tests)
