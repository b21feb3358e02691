"""The scanner and every baseline on every shared benchmark (development split), one run.

    python benchmarks/quality.py [--out runs/quality] [--extra scanner:PATH ...] [--quick]

Prints a markdown table per (benchmark, length) and the bar checks of the scanner issue:
miss rates (1 - metric) of the scanner against the best baseline (hybrid included).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from longscan.bench.runner import run_benchmark

BASELINES = (
    "bm25-sentence",
    "bm25-chunk",
    "dense-sentence",
    "dense-chunk",
    "hybrid-sentence",
    "hybrid-chunk",
    "random",
)
# (benchmark, words, max items, bar metrics, allowed miss ratio)
CONFIGS = (
    ("hotpotqa-long", 20_000, 40, ("FR@100", "FR@300"), 0.75),
    ("musique-long", 20_000, 30, ("FR@100", "FR@300"), 0.75),
    ("squad-long", 50_000, 60, ("hit@100",), 0.80),
    ("squad-long", 10_000, 60, (), None),
    ("squad-long", 2_000, 60, (), None),
    ("hotpotqa-collection", 20_000, 30, (), None),
    ("musique-collection", 20_000, 20, (), None),
    ("leval-coursera", 20_000, None, (), None),
    ("leval-financial", 20_000, None, (), None),
    ("loong", 20_000, None, (), None),
)
CHECKED = (
    "hit@100",
    "hit@300",
    "hit@1000",
    "hit@2000",
    "SR@100",
    "SR@300",
    "SR@1000",
    "SR@2000",
    "FR@100",
    "FR@300",
    "FR@1000",
    "FR@2000",
    "ahit@100",
    "ahit@300",
    "ahit@1000",
    "ahit@2000",
    "docSR@10",
    "docFR@10",
    "R@10",
    "R@50",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/quality"))
    parser.add_argument("--extra", nargs="*", default=[], help="more retrievers to compare")
    parser.add_argument("--quick", action="store_true", help="5 items per benchmark")
    args = parser.parse_args()
    retrievers = ["scanner", *args.extra, *BASELINES, "oracle"]
    verdicts = []
    for benchmark, words, max_items, bar_metrics, ratio in CONFIGS:
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
        scores = {r.retriever: r.overall for r in run.results}
        scanner = scores["scanner"]
        for metric in CHECKED:
            if metric not in scanner:
                continue
            best_name = max(BASELINES, key=lambda n: scores[n].get(metric, 0.0))
            best = scores[best_name].get(metric, 0.0)
            miss_ratio = (1 - scanner[metric]) / max(1 - best, 1e-9)
            bar = ratio if metric in bar_metrics and ratio is not None else 1.0
            verdicts.append(
                {
                    "benchmark": f"{benchmark}-{words // 1000}k",
                    "metric": metric,
                    "scanner": scanner[metric],
                    "best_baseline": best_name,
                    "best": best,
                    "miss_ratio": miss_ratio,
                    "bar": bar,
                    "met": miss_ratio <= bar + 1e-9,
                }
            )
    print("| benchmark | metric | scanner | best baseline | its value | miss ratio | bar | met |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    for v in verdicts:
        print(
            f"| {v['benchmark']} | {v['metric']} | {v['scanner']:.3f} | {v['best_baseline']} "
            f"| {v['best']:.3f} | {v['miss_ratio']:.2f} | ≤ {v['bar']:.2f} | "
            f"{'yes' if v['met'] else 'NO'} |"
        )
    (args.out / "verdicts.json").write_text(json.dumps(verdicts, indent=2))


if __name__ == "__main__":
    main()
