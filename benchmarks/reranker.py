"""The cross-encoder re-scorer against the scanner and the stock baselines (development split).

    python benchmarks/reranker.py [--adapter DIR] [--items N] [--out runs/reranker-eval]

Every retriever reads the same items. ``rerank`` is the hybrid's best sentences re-scored in
two rounds; ``scanner-rerank`` the scanner's; ``-1round`` variants skip the second-hop round.
Prints a table per benchmark and the re-scorer issue's miss ratios against the best stock
baseline (BM25 over sentences or 300-word chunks, dense or hybrid over sentences: the chunk
dense variants, never the best on these rows in earlier runs, would double the encoding).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from longscan.bench.runner import run_benchmark
from longscan.rerankers.cross_encoder import PACKAGED, CrossEncoderReranker
from longscan.retrievers import get_retriever
from longscan.retrievers.registry import register
from longscan.retrievers.rerank import RerankRetriever

STOCK = ("bm25-sentence", "bm25-chunk", "dense-sentence", "hybrid-sentence")
# (benchmark, words, default items, metrics with a bar: miss-ratio bar)
CONFIGS = (
    ("hotpotqa-long", 20_000, 100, {"FR@100": 0.7, "FR@300": 0.7}),
    ("musique-long", 20_000, None, {"FR@300": 0.7}),
    ("squad-long", 50_000, 200, {"hit@100": 0.75}),
)


def register_variants(adapter: Path) -> list[str]:
    reranker = CrossEncoderReranker.load(adapter)
    variants = {
        "rerank": lambda: RerankRetriever(get_retriever("hybrid-sentence"), reranker),
        "scanner-rerank": lambda: RerankRetriever(get_retriever("scanner"), reranker),
        "scanner-rerank-1round": lambda: RerankRetriever(
            get_retriever("scanner"), reranker, hop_depth=0
        ),
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
    retrievers = ["scanner", *register_variants(args.adapter), *STOCK]
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
            for name in ("scanner", "scanner-rerank", "scanner-rerank-1round", "rerank"):
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
