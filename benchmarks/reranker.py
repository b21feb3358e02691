"""The cross-encoder re-scorer against the scanner and the stock baselines (development split).

    python benchmarks/reranker.py [--adapter DIR] [--checkpoint DIR] [--items N] \
        [--part dev|ood|all] [--only squad-long,loong,...] [--variants scanner-rerank,...] \
        [--other-adapters NAME=DIR,...] [--no-rerank] [--out runs/reranker-eval] \
        [--ood-baselines bm25-chunk,...] [--table-context]

Every retriever reads the same items. ``scanner`` is the scan alone (the shipped default);
``rerank`` is the hybrid's 50 best sentences re-scored in two rounds; ``scanner-rerank`` (as
registered) the scan's 20 best, each candidate's best round standardised and added to the
scan's standardised logit; ``-blendW`` weights the scan's by W instead; ``-ce`` keeps the
cross-encoder's score alone; ``-1round`` skips the second-hop round; cheaper re-queries:
``-rereadR`` has round two read only round one's R best again, ``-D-H-R`` (any numbers named
in ``--variants``; 12-6-5 by default) reads the scan's D best and H BM25 candidates with
reread R; with ``--checkpoint``, ``candidate`` is that scanner alone and ``candidate-rerank``
(and ``candidate-rerank-D-H-R``) re-scored; ``scanner-rerank@NAME`` re-scores the same scan with
each of ``--other-adapters`` (seeds, recipes). Variants reading the same pairs
share one score memo, so each pair is read once, and every variant over one checkpoint reads
the same scan, computed once per item (``SharedScan``). With ``--part ood``, L-Eval
and Loong against the scan alone (and ``--ood-baselines``, in the same run). Prints a table
per benchmark and the re-scorer's miss ratios against the best stock baseline (BM25
over sentences or 300-word chunks, dense or hybrid over sentences: the chunk dense variants,
never the best on these rows in earlier runs, would double the encoding).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from longscan.bench.runner import run_benchmark
from longscan.documents import Document
from longscan.rerankers.cross_encoder import PACKAGED, CrossEncoderReranker
from longscan.rerankers.rounds import Lexical, TwoRounds
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
# no training example comes from these domains; answers are free text, so ``ahit`` only
OUT_OF_DOMAIN = (("leval-coursera", 20_000), ("leval-financial", 20_000), ("loong", 20_000))
SHARED_READS = 2_000_000  # score memo entries: every pair of a run, read once


class SharedScan(Scanner):
    """A scanner whose scans are kept for the whole run, by checkpoint, query and documents:
    the scan alone and every variant re-scoring it read the same scan, computed once."""

    scans: ClassVar[dict[tuple[str, str, tuple[str, ...]], tuple[np.ndarray, Lexical]]] = {}
    checkpoint: str = "shipped"

    def scan(
        self, query: str, documents: Sequence[Document], progress: bool = False
    ) -> tuple[np.ndarray, Lexical]:
        key = (self.checkpoint, query, tuple(d.content_hash for d in documents))
        if key not in self.scans:
            self.scans[key] = super().scan(query, documents, progress)
        logits, lexical = self.scans[key]
        return logits.copy(), lexical

    @classmethod
    def load(cls, directory: Path | None, rounds: TwoRounds | None = None) -> SharedScan:
        scanner = cls.from_pretrained(directory, rounds=rounds)
        scanner.checkpoint = str(directory or "shipped")
        return scanner


def rescored(
    reranker: CrossEncoderReranker, directory: Path | None = None, **rounds: Any
) -> Callable[[], Retriever]:
    """A factory of the scan of ``directory`` (default: the shipped checkpoint) re-scored by
    ``reranker`` in two rounds (``rounds``: ``TwoRounds``' options)."""
    return lambda: ScannerRetriever(SharedScan.load(directory, TwoRounds(reranker, **rounds)))


def load_reranker(adapter: Path) -> CrossEncoderReranker:
    """The adapter's re-scorer with a memo large enough that a run reads each pair once."""
    reranker = CrossEncoderReranker.load(adapter)
    reranker.cache_size = SHARED_READS
    return reranker


def register_variants(
    adapter: Path, checkpoint: Path | None = None, named: list[str] | None = None
) -> list[str]:
    """The re-scoring variants over ``adapter`` (``scanner``, registered, is the scan alone);
    with ``checkpoint``, also ``candidate`` (that scanner alone) and ``candidate-rerank``;
    every ``scanner-rerank-D-H-R`` or ``candidate-rerank-D-H-R`` in ``named`` too."""
    reranker = load_reranker(adapter)

    def scanner(directory: Path | None = None, **rounds: Any) -> Callable[[], Retriever]:
        return rescored(reranker, directory, **rounds)

    variants = {
        "scanner": lambda: ScannerRetriever(SharedScan.load(None)),  # the registered one's scan
        "rerank": lambda: RerankRetriever(
            get_retriever("hybrid-sentence"), reranker, depth=BASELINE_DEPTH
        ),
        "scanner-rerank-ce": scanner(),
        "scanner-rerank": scanner(blend=1.0),  # as registered
        "scanner-rerank-blend0.5": scanner(blend=0.5),
        "scanner-rerank-blend2": scanner(blend=2.0),
        "scanner-rerank-reread5": scanner(blend=1.0, reread=5),
        "scanner-rerank-ce-1round": scanner(hop_depth=0),
    }
    if checkpoint is not None:
        variants["candidate"] = lambda: ScannerRetriever(SharedScan.load(checkpoint))
        variants["candidate-rerank"] = scanner(checkpoint, blend=1.0)
    for name in ["scanner-rerank-12-6-5", "candidate-rerank-12-6-5", *(named or [])]:
        cheaper = re.fullmatch(r"(scanner|candidate)-rerank-(\d+)-(\d+)-(\d+)", name)
        if cheaper and (cheaper[1] == "scanner" or checkpoint is not None):
            depth, hop_depth, reread = (int(v) for v in cheaper.groups()[1:])
            directory = checkpoint if cheaper[1] == "candidate" else None
            variants[name] = scanner(
                directory, depth=depth, hop_depth=hop_depth, blend=1.0, reread=reread
            )
    for name, factory in variants.items():
        register(name, factory)
    return [name for name in variants if name != "scanner"]


def register_other_adapters(adapters: list[str]) -> list[str]:
    """``scanner-rerank@NAME`` for each ``NAME=DIR``: the registered re-scoring with that
    adapter (another seed or recipe) over the same scan, so one run compares them item for
    item and scans each item once."""
    names = []
    for spec in adapters:
        name, _, directory = spec.partition("=")
        if not directory:
            raise SystemExit(f"--other-adapters wants NAME=DIR, got {spec!r}")
        register(f"scanner-rerank@{name}", rescored(load_reranker(Path(directory)), blend=1.0))
        names.append(f"scanner-rerank@{name}")
    return names


def table(
    benchmark: str,
    words: int,
    retrievers: list[str],
    limit: int | None,
    out: Path,
    table_context: bool = False,
):
    """Run ``retrievers`` on the same items and print the table; returns metric → retriever
    → value and the number of items."""
    started = time.perf_counter()
    run = run_benchmark(
        benchmark,
        retrievers,
        target_words=words,
        max_items=limit,
        out_dir=out,
        table_context=table_context,
    )
    items = len(run.results[0].records)
    print(
        f"### {benchmark}-{words // 1000}k, {items} items "
        f"({time.perf_counter() - started:.0f} s)\n\n{run.markdown}\n",
        flush=True,
    )
    by_metric: dict[str, dict[str, float]] = {}
    for result in run.results:
        for metric, value in result.overall.items():
            by_metric.setdefault(metric, {})[result.retriever] = value
    return by_metric, items


def development(
    variants: list[str], cap: int | None, out: Path, only: list[str] | None = None
) -> None:
    """The bars' rows (of the benchmarks named in ``only``, default all): miss ratios
    against the best stock baseline, and scan ≥ rerank."""
    verdicts, versus_rerank = [], []
    for benchmark, words, default_items, bars in CONFIGS:
        if only and benchmark not in only:
            continue
        limit = default_items if cap is None else min(cap, default_items or 10**9)
        scores, _ = table(benchmark, words, ["scanner", *variants, *STOCK], limit, out)
        for metric, bar in bars.items():
            values = scores[metric]
            best = max(STOCK, key=values.__getitem__)
            for name in ("scanner", *variants):
                mine, theirs = values[name], values[best]
                ratio = (1 - mine) / (1 - theirs) if theirs < 1 else float("inf")
                verdicts.append(
                    f"| {benchmark}-{words // 1000}k | {metric} | {name} | {mine:.3f} | {best} "
                    f"| {theirs:.3f} | {ratio:.2f} | ≤ {bar} | {'yes' if ratio <= bar else 'NO'} |"
                )
                if name.startswith(("scanner-", "candidate-")) and "rerank" in values:
                    met = "yes" if mine >= values["rerank"] else "NO"
                    versus_rerank.append(
                        f"| {benchmark}-{words // 1000}k | {metric} | {name} | {mine:.3f} "
                        f"| {values['rerank']:.3f} | {met} |"
                    )
    print("| run | metric | retriever | value | best stock | its value | miss ratio | bar | met |")
    print("|---|---|---|---:|---|---:|---:|---:|---|")
    print("\n".join(verdicts))
    if versus_rerank:
        print("\n| run | metric | retriever | value | rerank | scan ≥ rerank |")
        print("|---|---|---|---:|---:|---|")
        print("\n".join(versus_rerank))


def out_of_domain(
    variants: list[str],
    out: Path,
    only: list[str] | None = None,
    baselines: Sequence[str] = (),
    table_context: bool = False,
) -> None:
    """No loss out of domain: every variant against the scan alone (the shipped scanner),
    item for item (on the benchmarks named in ``only``, default all), with ``baselines`` in
    the same run; ``table_context``: budgets count each row's context (``longscan eval``)."""
    rows = []
    for benchmark, words in OUT_OF_DOMAIN:
        if only and benchmark not in only:
            continue
        named = ["scanner", *variants, "bm25-sentence", *baselines]
        scores, items = table(benchmark, words, named, None, out, table_context)
        for metric in (m for m in scores if m.startswith("ahit@")):
            values = scores[metric]
            for name in variants:
                lost = round((values["scanner"] - values[name]) * items)
                rows.append(
                    f"| {benchmark}-{words // 1000}k | {metric} | {name} | {values[name]:.3f} "
                    f"| {values['scanner']:.3f} | {values['bm25-sentence']:.3f} | {lost} "
                    f"| {'yes' if lost <= 1 else 'NO'} |"
                )
    print(
        "| run | metric | retriever | value | shipped scanner | bm25-sentence "
        "| items lost | within one item |"
    )
    print("|---|---|---|---:|---:|---:|---:|---|")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", type=Path, default=PACKAGED)
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="a scanner checkpoint to compare with the shipped one (variants candidate, "
        "candidate-rerank)",
    )
    parser.add_argument("--items", type=int, default=None, help="items per benchmark (cap)")
    parser.add_argument("--out", type=Path, default=Path("runs/reranker-eval"))
    parser.add_argument(
        "--part",
        choices=("dev", "ood", "all"),
        default="all",
        help="dev: the development split's bars; ood: L-Eval and Loong against the scanner",
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated benchmarks to run (default: all of the part)",
    )
    parser.add_argument(
        "--variants",
        default=None,
        help="comma-separated variants to run (default: all; the dev part adds rerank unless "
        "--no-rerank)",
    )
    parser.add_argument(
        "--other-adapters",
        default=None,
        help="comma-separated NAME=DIR: scanner-rerank@NAME re-scores the same scan with each",
    )
    parser.add_argument(
        "--ood-baselines",
        default="",
        help="comma-separated retrievers the ood part runs beside bm25-sentence, e.g. "
        "bm25-chunk,dense-chunk,hybrid-chunk (the filings bar)",
    )
    parser.add_argument(
        "--table-context",
        action="store_true",
        help="ood budgets count each table row's title, header and group (longscan eval's "
        "--table-context)",
    )
    parser.add_argument(
        "--no-rerank",
        action="store_true",
        help="leave out rerank (hybrid top 50 re-scored: the slowest variant by far)",
    )
    args = parser.parse_args()
    chosen = args.variants.split(",") if args.variants else None
    variants = register_variants(args.adapter, args.checkpoint, chosen)
    if chosen:
        variants = [v for v in variants if v in chosen or v == "rerank"]
    if args.no_rerank:
        variants.remove("rerank")
    if args.other_adapters:
        variants += register_other_adapters(args.other_adapters.split(","))
    only = args.only.split(",") if args.only else None
    if args.part in ("dev", "all"):
        development(variants, args.items, args.out, only)
    if args.part in ("ood", "all"):
        baselines = [name for name in args.ood_baselines.split(",") if name]
        rescoring = [v for v in variants if v != "rerank"]
        out_of_domain(rescoring, args.out, only, baselines, args.table_context)


if __name__ == "__main__":
    main()
