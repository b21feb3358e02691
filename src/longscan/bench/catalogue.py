"""The named benchmarks that the evaluation runner, CLI and benchmark scripts build by name.

Kept apart from ``builders`` so the per-dataset builders hold only document assembly, while
this module maps each public benchmark name to a builder call with the default options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from longscan.bench.builders import (
    DEFAULT_TARGET_WORDS,
    MultiHopDataset,
    MultiHopMode,
    build_leval,
    build_loong,
    build_multihop,
    build_squad_long,
    check_split,
)
from longscan.bench.contracts import build_contracts
from longscan.bench.datasets import Split
from longscan.bench.filings import build_filings
from longscan.items import QAItem


@dataclass(frozen=True, slots=True)
class _Request:
    split: Split
    target_words: int
    max_items: int | None
    seed: int
    data_dir: str | Path | None


@dataclass(frozen=True, slots=True)
class _Benchmark:
    description: str
    build: Callable[[_Request], list[QAItem]]
    evaluation_only: bool = False


def _multihop(dataset: MultiHopDataset, mode: MultiHopMode) -> Callable[[_Request], list[QAItem]]:
    return lambda r: build_multihop(
        dataset, r.split, r.target_words, r.max_items, r.seed, r.data_dir, mode=mode
    )


_REGISTRY: dict[str, _Benchmark] = {
    "squad-long": _Benchmark(
        "SQuAD v1.1 paragraphs concatenated into one long document; gold = answer spans",
        lambda r: build_squad_long(r.split, r.target_words, r.max_items, r.seed, r.data_dir),
    ),
    "hotpotqa-long": _Benchmark(
        "HotpotQA question paragraphs mixed into other questions' paragraphs as one document; "
        "gold = supporting sentences",
        _multihop("hotpotqa", "long"),
    ),
    "musique-long": _Benchmark(
        "MuSiQue question paragraphs mixed into other questions' paragraphs as one document; "
        "gold = supporting paragraphs",
        _multihop("musique", "long"),
    ),
    "hotpotqa-collection": _Benchmark(
        "hotpotqa-long with one document per paragraph; gold documents = supporting paragraphs",
        _multihop("hotpotqa", "collection"),
    ),
    "musique-collection": _Benchmark(
        "musique-long with one document per paragraph; gold documents = supporting paragraphs",
        _multihop("musique", "collection"),
    ),
    "leval-coursera": _Benchmark(
        "L-Eval coursera: multiple-choice questions over lecture transcripts; answers only",
        lambda r: build_leval("coursera", r.max_items, r.data_dir),
        evaluation_only=True,
    ),
    "leval-financial": _Benchmark(
        "L-Eval financial_qa: open questions over earnings-call transcripts; answers only",
        lambda r: build_leval("financial_qa", r.max_items, r.data_dir),
        evaluation_only=True,
    ),
    "loong": _Benchmark(
        "Loong English multi-document QA over financial reports and papers; answers only",
        lambda r: build_loong(r.max_items, r.seed, r.data_dir),
        evaluation_only=True,
    ),
    "filings": _Benchmark(
        "questions about the statement figures of whole SEC reports kept out of training, "
        "asked in the row's words and in other words; gold = the answer figure",
        lambda r: build_filings(r.max_items, r.seed, r.data_dir),
        evaluation_only=True,
    ),
    "filings-loong": _Benchmark(
        "the filings questions over the reports of Loong's development sample, in Loong's "
        "text layout; gold = the answer figure",
        lambda r: build_filings(r.max_items, r.seed, r.data_dir, loong=True),
        evaluation_only=True,
    ),
    "contracts": _Benchmark(
        "questions about whole contracts kept out of training, as written and in other "
        "words; gold = the answer's occurrences",
        lambda r: build_contracts(r.max_items, r.seed, r.data_dir),
        evaluation_only=True,
    ),
    "loong-concat": _Benchmark(
        "loong with each item's documents concatenated into one document (headers kept)",
        lambda r: build_loong(r.max_items, r.seed, r.data_dir, concatenate=True),
        evaluation_only=True,
    ),
}

BENCHMARKS: dict[str, str] = {name: spec.description for name, spec in _REGISTRY.items()}


def build_benchmark(
    name: str,
    split: Split = "dev",
    target_words: int = DEFAULT_TARGET_WORDS,
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | Path | None = None,
) -> list[QAItem]:
    """Build the benchmark called ``name`` (see ``BENCHMARKS``) with the default options.

    ``target_words`` sets the length of built documents; L-Eval and Loong keep their own
    documents and ignore it. For other options (questions per document, split fractions,
    collection mode) call the dataset's builder directly.

    Raises:
        ValueError: an unknown name or split, or bad arguments.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {', '.join(_REGISTRY)}")
    check_split(split)
    benchmark = _REGISTRY[name]
    if benchmark.evaluation_only and split != "dev":
        raise ValueError(f"{name} is an evaluation set with no {split!r} split; use 'dev'")
    return benchmark.build(_Request(split, target_words, max_items, seed, data_dir))
