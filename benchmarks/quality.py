"""The scanner and every baseline on every shared benchmark (development split), one run.

    python benchmarks/quality.py [--out runs/quality] [--extra scanner:PATH ...] [--quick]
        [--save NAME] [--only hotpotqa-long:20000,...]

Prints a markdown table per (benchmark, length) and the scanner's bar checks: miss rates
(1 - metric) of the scanner against the best baseline (hybrid included). With ``--save``,
writes one table of every retriever's headline measures per set to
``benchmarks/results/NAME.json`` for the report.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import result_files
from summarize import VERDICT_COLUMNS, load, verdict_rows, verdicts

from longscan.bench.runner import run_benchmark
from longscan.evaluation import EvaluationResult

BASELINES = (
    "bm25-sentence",
    "bm25-chunk",
    "dense-sentence",
    "dense-chunk",
    "hybrid-sentence",
    "hybrid-chunk",
    "random",
)
# (benchmark, words, max items, the measures the report shows); the bars live in
# summarize.BARS. The three bar sets use every dev question there is (HotpotQA 100, MuSiQue
# 38) or 200 (SQuAD): with 40, training seeds alone moved FR@100 by five questions.
CONFIGS = (
    ("hotpotqa-long", 20_000, 100, ("hit@100", "FR@100", "FR@300", "nDCG@10")),
    ("musique-long", 20_000, None, ("hit@100", "FR@100", "FR@300", "FR@1000", "FR@2000")),
    ("squad-long", 50_000, 200, ("hit@100", "FR@100", "FR@300")),
    ("squad-long", 10_000, 60, ("hit@100", "nDCG@10")),
    ("squad-long", 2_000, 60, ("hit@100", "nDCG@10")),
    ("hotpotqa-collection", 20_000, 30, ("FR@300", "nDCG@10", "docSR@10")),
    ("musique-collection", 20_000, 20, ("FR@300", "nDCG@10", "docSR@10")),
    ("leval-coursera", 20_000, None, ("ahit@300", "ahit@2000")),
    ("leval-financial", 20_000, None, ("ahit@300", "ahit@1000", "ahit@2000")),
    ("loong", 20_000, None, ("ahit@300", "ahit@1000", "ahit@2000")),
)


def report_rows(
    title: str, results: list[EvaluationResult], measures: tuple[str, ...]
) -> list[list[object]]:
    """``title: measure`` then each retriever's value, three decimals."""
    return [
        [f"{title}: {measure}", *(f"{r.overall.get(measure, float('nan')):.3f}" for r in results)]
        for measure in measures
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/quality"))
    parser.add_argument("--extra", nargs="*", default=[], help="more retrievers to compare")
    parser.add_argument("--quick", action="store_true", help="5 items per benchmark")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    parser.add_argument(
        "--only",
        default=None,
        help="Comma-separated BENCHMARK:WORDS of CONFIGS to run (default: all of them).",
    )
    args = parser.parse_args()
    chosen = None if args.only is None else set(args.only.split(","))
    configs = [c for c in CONFIGS if chosen is None or f"{c[0]}:{c[1]}" in chosen]
    if chosen is not None and len(configs) != len(chosen):
        parser.error(f"--only names a set not in CONFIGS: {args.only}")
    retrievers = ["scanner", *args.extra, *BASELINES, "oracle"]
    rows: list[list[object]] = []
    for benchmark, words, max_items, measures in configs:
        limit = 5 if args.quick else max_items
        started = time.perf_counter()
        run = run_benchmark(
            benchmark, retrievers, target_words=words, max_items=limit, out_dir=args.out
        )
        items = len(run.results[0].records)
        mean_words = sum(r.words for r in run.results[0].records) / items
        command = (
            f"longscan eval -b {benchmark} --target-words {words}"
            + (f" --max-items {limit}" if limit else "")
            + "".join(f" -r {name}" for name in retrievers)
        )
        print(
            f"### {benchmark}, {items} items, mean {mean_words:,.0f} words "
            f"({time.perf_counter() - started:.0f} s)\n\n`{command}`\n"
        )
        print(run.markdown + "\n", flush=True)
        rows += report_rows(f"{benchmark} {words // 1000}k ({items})", run.results, measures)
    print("\n".join(verdict_rows(load(args.out, {}), "scanner")))
    if args.save:
        columns = ["set (items): measure", *retrievers]
        found = result_files.table("Every retriever, development split", columns, rows)
        bars = result_files.table(
            "The scanner's bars: its miss rate over the best baseline's",
            VERDICT_COLUMNS,
            [  # the explicit bars, and every measure where the scanner is behind
                row
                for row in verdicts(load(args.out, {}), "scanner")
                if row[6] != "≤ 1.00" or row[7] == "NO"
            ],
        )
        print(f"saved {result_files.save(args.save, vars(args), [found, bars])}")


if __name__ == "__main__":
    main()
