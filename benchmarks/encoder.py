"""Does the fine-tuned bi-encoder pay? Stock against tuned dense and hybrid retrieval.

Dense and hybrid retrieval over sentences with the packaged MiniLM, against the same with a
``longscan train-encoder`` adapter merged in (development split, the same items for every
retriever).

    python benchmarks/encoder.py --adapter DIR [--items N] [--out runs/encoder-eval]

``dense-ft-sentence`` and ``hybrid-ft-sentence`` are the tuned twins of the stock
``dense-sentence`` and ``hybrid-sentence``; ``bm25-sentence`` is printed beside them. Vectors
are cached under the encoder's name, which carries the adapter's hash.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from longscan.bench.runner import run_benchmark
from longscan.encoders.minilm import get_encoder
from longscan.retrievers.dense import DenseRetriever
from longscan.retrievers.hybrid import HybridRetriever
from longscan.retrievers.registry import register

# (benchmark, words, default items): the re-scorer's development rows
ROWS = (("hotpotqa-long", 20_000, 100), ("musique-long", 20_000, None), ("squad-long", 50_000, 200))
STOCK = ("bm25-sentence", "dense-sentence", "hybrid-sentence")
TUNED = ("dense-ft-sentence", "hybrid-ft-sentence")


def register_tuned(adapter: Path) -> None:
    """Register the tuned twins over ``adapter``."""
    encoder = get_encoder(adapter=str(adapter))
    register("dense-ft-sentence", lambda: DenseRetriever("sentence", encoder=encoder))
    register(
        "hybrid-ft-sentence",
        lambda: HybridRetriever("sentence", dense=DenseRetriever("sentence", encoder=encoder)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", type=Path, required=True)
    parser.add_argument("--items", type=int, default=None, help="items per benchmark (cap)")
    parser.add_argument("--out", type=Path, default=Path("runs/encoder-eval"))
    args = parser.parse_args()
    register_tuned(args.adapter)
    for benchmark, words, default_items in ROWS:
        limit = default_items if args.items is None else min(args.items, default_items or 10**9)
        started = time.perf_counter()
        run = run_benchmark(
            benchmark, [*STOCK, *TUNED], target_words=words, max_items=limit, out_dir=args.out
        )
        items = len(run.results[0].records)
        print(
            f"### {benchmark}-{words // 1000}k, {items} items "
            f"({time.perf_counter() - started:.0f} s)\n\n{run.markdown}\n",
            flush=True,
        )


if __name__ == "__main__":
    main()
