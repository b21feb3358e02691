"""Compact tables and the scanner's bar checks from the JSON files of a quality run.

    python benchmarks/summarize.py runs/quality [--scanner NAME] [--rename OLD=NEW ...]

A miss rate is 1 - metric; the ratio is the scanner's miss rate over the best baseline's
(hybrid included). Bars: multi-hop FR@100/FR@300 ≤ 0.75, SQuAD ≥ 50k hit@100 ≤ 0.80, and
everything else ≤ 1 (never below the best baseline).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from longscan.evaluation import EvaluationResult
from longscan.evaluation.report import KEY_MEASURES, headline_measures, markdown_table, read_json
from longscan.retrievers import BASELINES

BARS = {
    ("hotpotqa-long", "FR@100"): 0.75,
    ("hotpotqa-long", "FR@300"): 0.75,
    ("musique-long", "FR@100"): 0.75,
    ("musique-long", "FR@300"): 0.75,
    ("squad-long-50k", "hit@100"): 0.80,
}


def load(folder: Path, rename: dict[str, str]) -> dict[str, list[EvaluationResult]]:
    runs = {}
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text())
        if isinstance(raw, list) or "results" in raw:  # an evaluation file (read_json)
            _, results = read_json(path)
            for result in results:
                result.retriever = rename.get(result.retriever, result.retriever)
            runs[path.stem] = results
    return runs


def bar_of(run: str, metric: str) -> float:
    for (prefix, name), ratio in BARS.items():
        if run.startswith(prefix) and name == metric:
            return ratio
    return 1.0


VERDICT_COLUMNS = ["run", "metric", "scanner", "best baseline", "its value", "miss ratio"]
VERDICT_COLUMNS += ["bar", "met"]


def verdicts(runs: dict[str, list[EvaluationResult]], scanner: str) -> list[list[object]]:
    """Per run and key measure: the scanner's value, the best baseline's, the ratio of
    their miss rates, the bar and whether it is met."""
    rows: list[list[object]] = []
    for run, results in runs.items():
        scores = {r.retriever: r.overall for r in results}
        if scanner not in scores:
            continue
        for metric in KEY_MEASURES:
            if metric not in scores[scanner]:
                continue
            best = max(BASELINES, key=lambda name: scores[name].get(metric, 0.0))
            mine, theirs = scores[scanner][metric], scores[best].get(metric, 0.0)
            ratio = (1 - mine) / (1 - theirs) if theirs < 1 else (0.0 if mine >= 1 else None)
            bar = bar_of(run, metric)
            shown = "∞ (baseline perfect)" if ratio is None else f"{ratio:.2f}"
            met = ratio is not None and ratio <= bar + 1e-9
            rows.append(
                [run, metric, round(mine, 3), best, round(theirs, 3), shown, f"≤ {bar:.2f}"]
                + ["yes" if met else "NO"]
            )
    return rows


def verdict_rows(runs: dict[str, list[EvaluationResult]], scanner: str) -> list[str]:
    return ["| " + " | ".join(str(cell) for cell in row) + " |" for row in verdicts(runs, scanner)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--scanner", default="scanner")
    parser.add_argument("--rename", nargs="*", default=[], help="OLD=NEW retriever names")
    parser.add_argument("--no-tables", action="store_true")
    args = parser.parse_args()
    runs = load(args.folder, dict(item.split("=", 1) for item in args.rename))
    if not args.no_tables:
        for run, results in runs.items():
            print(f"#### {run}\n\n{markdown_table(results, headline_measures(results))}\n")
    print("| run | metric | scanner | best baseline | its value | miss ratio | bar | met |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    print("\n".join(verdict_rows(runs, args.scanner)))


if __name__ == "__main__":
    main()
