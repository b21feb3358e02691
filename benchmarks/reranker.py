"""The cross-encoder re-scorer against the scanner and the stock baselines (development split).

    python benchmarks/reranker.py [--adapter DIR] [--items N] [--out runs/reranker-eval]

Every retriever reads the same items. ``rerank`` is the hybrid's 50 best sentences re-scored
in two rounds; ``scanner-rerank`` the scanner's 20 best; ``-blend`` adds the scanner's
standardised logit to the cross-encoder's; ``-1round`` skips the second-hop round.
Prints a table per benchmark and the re-scorer issue's miss ratios against the best stock
baseline (BM25 over sentences or 300-word chunks, dense or hybrid over sentences: the chunk
dense variants, never the best on these rows in earlier runs, would double the encoding).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longscan.bench.runner import run_benchmark
from longscan.rerankers.cross_encoder import PACKAGED, CrossEncoderReranker
from longscan.rerankers.rounds import TwoRounds
from longscan.retrievers import get_retriever
from longscan.retrievers.base import Retriever
from longscan.retrievers.registry import register
from longscan.retrievers.rerank import BASELINE_DEPTH, RerankRetriever
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning.scanner import Scanner

STOCK = ("bm25-sentence", "bm25-chunk", "dense-sentence", "hybrid-sentence")
# (benchmark, words, default items, metrics with a bar: miss-ratio bar)
CONFIGS = (
    ("hotpotqa-long", 20_000, 100, {"FR@100": 0.7, "FR@300": 0.7}),
    ("musique-long", 20_000, None, {"FR@300": 0.7}),
    ("squad-long", 50_000, 200, {"hit@100": 0.75}),
)


def register_variants(adapter: Path) -> list[str]:
    reranker = CrossEncoderReranker.load(adapter)

    def scanner(**rounds: Any) -> Callable[[], Retriever]:
        return lambda: ScannerRetriever(
            Scanner.from_pretrained(rounds=TwoRounds(reranker, **rounds))
        )

    variants = {
        "rerank": lambda: RerankRetriever(
            get_retriever("hybrid-sentence"), reranker, depth=BASELINE_DEPTH
        ),
        "scanner-rerank": scanner(),
        "scanner-rerank-blend": scanner(blend=True),
        "scanner-rerank-1round": scanner(hop_depth=0),
    }
    for name, factory in variants.items():
        register(name, factory)
    return list(variants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", type=Path, default=PACKAGED)
    parser.add_argument("--items", type=int, default=None, help="items per benchmark (cap)")
    parser.add_argument("--out", type=Path, default=Path("runs/reranker-eval"))
    args = parser.parse_args()
    variants = register_variants(args.adapter)
    retrievers = ["scanner", *variants, *STOCK]
    verdicts = []
    for benchmark, words, default_items, bars in CONFIGS:
        limit = default_items if args.items is None else min(args.items, default_items or 10**9)
        started = time.perf_counter()
        run = run_benchmark(
            benchmark, retrievers, target_words=words, max_items=limit, out_dir=args.out
        )
        items = len(run.results[0].records)
        print(
            f"### {benchmark}-{words // 1000}k, {items} items "
            f"({time.perf_counter() - started:.0f} s)\n\n{run.markdown}\n",
            flush=True,
        )
        scores = {r.retriever: r.overall for r in run.results}
        for metric, bar in bars.items():
            best = max(STOCK, key=lambda name: scores[name][metric])
            for name in ("scanner", *variants):
                mine, theirs = scores[name][metric], scores[best][metric]
                ratio = (1 - mine) / (1 - theirs) if theirs < 1 else float("inf")
                verdicts.append(
                    f"| {benchmark}-{words // 1000}k | {metric} | {name} | {mine:.3f} | {best} "
                    f"| {theirs:.3f} | {ratio:.2f} | ≤ {bar} | {'yes' if ratio <= bar else 'NO'} |"
                )
    print("| run | metric | retriever | value | best stock | its value | miss ratio | bar | met |")
    print("|---|---|---|---:|---|---:|---:|---:|---|")
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
