"""The scanner against every baseline on the development split, in one run.

    python benchmarks/scanner_quality.py [--out runs/scanner] [--extra scanner:PATH ...]

Prints the markdown tables and the bar checks of the scanner issue: miss rates
(100 - metric) of the scanner against the best baseline (hybrid included).
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
    ("hotpotqa-long", 20_000, 30, ("FR@100", "FR@300"), 0.75),
    ("musique-long", 20_000, 20, ("FR@100", "FR@300"), 0.75),
    ("squad-long", 50_000, 20, ("hit@100",), 0.80),
    ("squad-long", 10_000, 20, ("hit@100",), None),
    ("hotpotqa-collection", 20_000, 30, ("docFR@10",), None),
    ("loong", 20_000, 10, ("ahit@300",), None),
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
    parser.add_argument("--out", type=Path, default=Path("runs/scanner"))
    parser.add_argument("--extra", nargs="*", default=[], help="more retrievers to compare")
    args = parser.parse_args()
    retrievers = ["scanner", *args.extra, *BASELINES]
    verdicts = []
    for benchmark, words, limit, bar_metrics, ratio in CONFIGS:
        started = time.perf_counter()
        run = run_benchmark(
            benchmark, retrievers, target_words=words, max_items=limit, out_dir=args.out
        )
        print(f"### {benchmark} {words // 1000}k ({time.perf_counter() - started:.0f} s)\n")
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
