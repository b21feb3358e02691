"""The scanner and every baseline on every shared benchmark (development split), one run.

    python benchmarks/quality.py [--out runs/quality] [--extra scanner:PATH ...] [--quick]

Prints a markdown table per (benchmark, length) and the bar checks of the scanner issue:
miss rates (1 - metric) of the scanner against the best baseline (hybrid included).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from summarize import load, verdict_rows

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
# (benchmark, words, max items); the bars live in summarize.BARS. The three bar sets use every
# dev question there is (HotpotQA 100, MuSiQue 38) or 200 (SQuAD): with 40, training seeds
# alone moved FR@100 by five questions.
CONFIGS = (
    ("hotpotqa-long", 20_000, 100),
    ("musique-long", 20_000, None),
    ("squad-long", 50_000, 200),
    ("squad-long", 10_000, 60),
    ("squad-long", 2_000, 60),
    ("hotpotqa-collection", 20_000, 30),
    ("musique-collection", 20_000, 20),
    ("leval-coursera", 20_000, None),
    ("leval-financial", 20_000, None),
    ("loong", 20_000, None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/quality"))
    parser.add_argument("--extra", nargs="*", default=[], help="more retrievers to compare")
    parser.add_argument("--quick", action="store_true", help="5 items per benchmark")
    args = parser.parse_args()
    retrievers = ["scanner", *args.extra, *BASELINES, "oracle"]
    for benchmark, words, max_items in CONFIGS:
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
    print("\n".join(verdict_rows(load(args.out, {}), "scanner")))


if __name__ == "__main__":
    main()
