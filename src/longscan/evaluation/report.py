"""Readable views of evaluation results: rich tables, markdown, JSON and length plots.

Every view is built from the same rows (``comparison_rows``), so the terminal table, the
markdown in BENCHMARKS.md and the JSON on disk cannot disagree on a number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from rich.table import Table

from longscan.evaluation.evaluator import (
    ITEMS,
    SECONDS_PER_DOC,
    WORDS_PER_SECOND,
    EvaluationResult,
)
from longscan.evaluation.measures import parse_measures
from longscan.evaluation.significance import ALPHA, PairedTest

MISSING = "–"
# The headline measures shown where every measure would not fit (terminal, summaries); the
# JSON holds them all.
KEY_MEASURES = (
    "hit@100",
    "hit@300",
    "hit@1000",
    "hit@2000",
    "SR@300",
    "FR@100",
    "FR@300",
    "FR@1000",
    "FR@2000",
    "ahit@100",
    "ahit@300",
    "ahit@1000",
    "ahit@2000",
    "R@10",
    "R@50",
    "nDCG@10",
    "docSR@10",
    "docR@1",
    "docFR@10",
)


def select_measures(
    results: Sequence[EvaluationResult], measures: Sequence[str] | None = None
) -> list[str]:
    """The measure columns: ``measures`` (validated), else every measure that scored an item.

    Without ``measures``, columns follow the order of the first result's measure list, and a
    measure that applied to no item of any result is left out.
    """
    if measures is not None:
        return [measure.name for measure in parse_measures(measures)]
    scored = _scored(results)
    ordered = dict.fromkeys(name for result in results for name in result.measures)
    return [name for name in ordered if name in scored]


def headline_measures(results: Sequence[EvaluationResult]) -> list[str]:
    """The ``KEY_MEASURES`` that scored an item in any of ``results``, in that order."""
    scored = _scored(results)
    return [name for name in KEY_MEASURES if name in scored]


def _scored(results: Sequence[EvaluationResult]) -> set[str]:
    return {name for result in results for name in result.overall}


def _format(value: float | None, key: str) -> str:
    if value is None:
        return MISSING
    if key == ITEMS:
        return f"{int(value)}"
    if key == WORDS_PER_SECOND:
        return f"{value:,.0f}"
    if key == SECONDS_PER_DOC:
        return f"{value:.3g}"
    return f"{value:.3f}"


def _row(label: str, summary: Mapping[str, float], columns: Sequence[str]) -> list[str]:
    return [label] + [_format(summary.get(column), column) for column in columns]


def comparison_rows(
    results: Sequence[EvaluationResult], measures: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Header and formatted rows: one row per retriever, one column per measure, then speed."""
    columns = [ITEMS, *select_measures(results, measures), SECONDS_PER_DOC, WORDS_PER_SECOND]
    rows = [_row(result.retriever, result.overall, columns) for result in results]
    return ["retriever", *columns], rows


def breakdown_rows(
    result: EvaluationResult, measures: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one result: overall, then each length bucket, then each position."""
    columns = [ITEMS, *select_measures([result], measures), SECONDS_PER_DOC, WORDS_PER_SECOND]
    rows = [_row("all", result.overall, columns)]
    rows += [_row(f"length {label}", s, columns) for label, s in result.by_length.items()]
    rows += [_row(f"evidence {label}", s, columns) for label, s in result.by_position.items()]
    return ["group", *columns], rows


def _rich_table(header: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> Table:
    table = Table(title=title)
    table.add_column(header[0], style="bold", overflow="fold")
    for name in header[1:]:
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def comparison_table(
    results: Sequence[EvaluationResult],
    measures: Sequence[str] | None = None,
    title: str = "Retrievers",
) -> Table:
    """A rich table with retrievers side by side (rows) over the measures (columns)."""
    return _rich_table(*comparison_rows(results, measures), title=title)


def result_table(result: EvaluationResult, measures: Sequence[str] | None = None) -> Table:
    """A rich table of one result, broken down by document length and evidence position."""
    return _rich_table(*breakdown_rows(result, measures), title=f"{result.retriever}")


def markdown_table(
    results: Sequence[EvaluationResult], measures: Sequence[str] | None = None
) -> str:
    """A GitHub markdown table of ``comparison_rows`` (for BENCHMARKS.md)."""
    return _markdown(*comparison_rows(results, measures))


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join([":---"] + ["---:"] * (len(header) - 1)) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def significance_rows(tests: Sequence[PairedTest]) -> tuple[list[str], list[list[str]]]:
    """One row per paired test: the two means, their difference and the p-value (``*``
    where it is below ``ALPHA``)."""
    header = ["retriever", "measure", "items", "baseline", "mean", "difference", "p"]
    rows = [
        [
            f"{test.other} vs {test.baseline}",
            test.measure,
            str(test.items),
            _format(test.baseline_mean, test.measure),
            _format(test.other_mean, test.measure),
            f"{test.difference:+.3f}",
            f"{test.p_value:.3f}{'*' if test.significant else ''}",
        ]
        for test in tests
    ]
    return header, rows


def significance_table(tests: Sequence[PairedTest]) -> Table:
    """A rich table of paired tests against the first retriever."""
    title = f"Paired randomization tests against the first retriever (* p < {ALPHA})"
    return _rich_table(*significance_rows(tests), title=title)


def significance_markdown(tests: Sequence[PairedTest]) -> str:
    """The paired tests as a GitHub markdown table."""
    header, rows = significance_rows(tests)
    return _markdown(header, rows)


def write_json(
    results: Sequence[EvaluationResult], path: str | Path, settings: dict[str, Any] | None = None
) -> Path:
    """Write ``{"settings": ..., "results": [result.to_dict(), ...]}`` as JSON (parent folders
    are created). ``settings`` are the run's settings, so the run can be repeated from the
    file; the versions of longscan and its main libraries are added to them."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("longscan", "torch", "onnxruntime", "sentence-transformers", "bm25s"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "settings": {**(settings or {}), "versions": versions},
        "results": [result.to_dict() for result in results],
    }
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_json(path: str | Path) -> tuple[dict[str, Any], list[EvaluationResult]]:
    """``(settings, results)`` from ``write_json``'s file (or the bare list earlier runs
    wrote, whose settings are empty)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(raw, list):
        return {}, [EvaluationResult.from_dict(entry) for entry in raw]
    return raw["settings"], [EvaluationResult.from_dict(entry) for entry in raw["results"]]


def plot_by_length(
    results: Sequence[EvaluationResult],
    path: str | Path,
    measures: Sequence[str] | None = None,
    columns: int = 3,
) -> Path:
    """Save ``length_figure`` as a PNG.

    Raises:
        ValueError: no results, or results bucketed with different length edges.
    """
    figure = length_figure(results, measures, columns)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=120)
    return path


def length_figure(
    results: Sequence[EvaluationResult], measures: Sequence[str] | None = None, columns: int = 3
) -> Figure:
    """One panel per measure: its mean per length bucket, a line per retriever, over the
    buckets some retriever has items in. A run of a single length gets a bar per retriever
    instead (a line through one point shows nothing). Buckets with no item for a retriever
    are gaps (NaN), not zeros. Rendering goes through the Agg canvas directly, so no global
    matplotlib backend is switched.

    Raises:
        ValueError: no results, or results bucketed with different length edges.
    """
    if not results:
        raise ValueError("nothing to plot: no results")
    if len({tuple(result.length_edges) for result in results}) != 1:
        raise ValueError("results use different length buckets; evaluate them with one set")
    names = select_measures(results, measures)
    if not names:
        raise ValueError("nothing to plot: no measure scored any item")
    series = [(result.retriever, result.by_length) for result in results]
    labels = [label for label in results[0].buckets.labels
              if any(by_length.get(label) for _, by_length in series)]  # fmt: skip
    columns = max(1, min(columns, len(names)))
    rows = math.ceil(len(names) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.2 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, name in zip(axes, names, strict=False):
        if len(labels) == 1:
            values = [by_length.get(labels[0], {}).get(name, math.nan) for _, by_length in series]
            ax.bar(range(len(series)), values, color=[f"C{i}" for i in range(len(series))])
            ax.set_xticks(range(len(series)), [retriever for retriever, _ in series], rotation=30)
            ax.set_title(f"{name} (length {labels[0]} words)")
        else:
            for retriever, by_length in series:
                values = [by_length.get(label, {}).get(name, math.nan) for label in labels]
                ax.plot(range(len(labels)), values, marker="o", label=retriever)
            ax.set_title(name)
            ax.set_xticks(range(len(labels)), labels, rotation=30)
            ax.set_xlabel("document length (words)")
        ax.set_ylim(-0.03, 1.03)  # every measure is a fraction; a fixed axis compares panels
        ax.grid(alpha=0.3)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    if len(labels) > 1:
        axes[0].legend(fontsize="small")
    return figure
