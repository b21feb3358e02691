"""Every baseline retriever on every shared benchmark, at several document lengths.

    python benchmarks/baselines.py [--out runs/baselines] [--retrievers a,b,...] [--quick]

Writes one JSON/markdown/plot triple per (benchmark, length) under --out, and prints a
markdown section ready for BENCHMARKS.md. Embeddings are cached on disk, so a rerun only
pays for what changed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from longscan.bench.runner import run_benchmark

RETRIEVERS = (
    "bm25-sentence",
    "bm25-chunk",
    "dense-sentence",
    "dense-chunk",
    "hybrid-sentence",
    "hybrid-chunk",
    "random",
    "oracle",
)
# (benchmark, target words, max items): three SQuAD lengths up to a >= 50k-word document,
# the multi-hop sets as one long document and as a collection, and the answer-only sets.
CONFIGS = (
    ("squad-long", 2_000, 40),
    ("squad-long", 10_000, 40),
    ("squad-long", 50_000, 20),
    ("hotpotqa-long", 20_000, 40),
    ("musique-long", 20_000, 30),
    ("hotpotqa-collection", 20_000, 40),
    ("musique-collection", 20_000, 30),
    ("leval-coursera", 20_000, None),
    ("leval-financial", 20_000, None),
    ("loong", 20_000, None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/baselines"))
    parser.add_argument("--retrievers", default=",".join(RETRIEVERS))
    parser.add_argument("--quick", action="store_true", help="5 items per benchmark")
    args = parser.parse_args()
    retrievers = args.retrievers.split(",")
    sections = []
    for benchmark, words, max_items in CONFIGS:
        limit = 5 if args.quick else max_items
        started = time.perf_counter()
        run = run_benchmark(
            benchmark, retrievers, target_words=words, max_items=limit, out_dir=args.out
        )
        seconds = time.perf_counter() - started
        items = len(run.results[0].records)
        words_mean = sum(r.words for r in run.results[0].records) / items
        command = (
            f"longscan eval -b {benchmark} --target-words {words}"
            + (f" --max-items {limit}" if limit else "")
            + "".join(f" -r {name}" for name in retrievers)
        )
        sections.append(
            f"### {benchmark}, {items} items, mean {words_mean:,.0f} words\n\n"
            f"`{command}` ({seconds:.0f} s)\n\n{run.markdown}\n"
        )
        print(sections[-1], flush=True)
    (args.out / "baselines.md").write_text("\n".join(sections))


if __name__ == "__main__":
    main()
