"""Scanner variants that need no retraining, evaluated beside the shipped scanner.

    python benchmarks/scanner_variants.py eval -b hotpotqa-long --target-words 20000 \
        --max-items 40 -r scanner -r scanner-ens3 -r scanner-rrf2 -r hybrid-sentence ...

Takes ``longscan``'s own arguments (run ``... --help``) after registering:

* ``scanner-ens3`` / ``scanner-ens4``: the mean of the per-query standardised logits of the
  shipped checkpoint and 2 or 3 more trained on the same vectors (``runs/scanner-causal4``,
  ``runs/scanner-skip7``, ``runs/scanner-skip9``: not in the repository; train them first
  with the ``longscan train`` commands in BENCHMARKS.md). They share the sentence vectors, so
  an ensemble costs one more SSM pass per member, not another encoding;
* ``scanner-ens-NAME``, registered by ``--ensemble NAME=DIR,DIR,...`` (anywhere among the
  ``longscan`` arguments; ``-`` names the shipped checkpoint): the same mean over any
  checkpoints, e.g. one recipe trained with several seeds;
* ``scanner-rrf{1,2,3}``: reciprocal-rank fusion of the scanner's ranking (weighted 1-3)
  with the BM25 and dense rankings the scanner already computes as features;
* ``scanner-div{0.5,1}``: paragraph diversity: on standardised logits, a sentence loses
  0.5 or 1 for every better-scored sentence of its own paragraph, so the top of the ranking
  spreads over paragraphs (multi-hop evidence sits in several).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from longscan.documents import Document
from longscan.lexical.fusion import RRF_K, ranks_of
from longscan.retrievers.base import Retriever, Units
from longscan.retrievers.registry import register
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning.features import FEATURE_NAMES
from longscan.scanning.scanner import Scanner

MEMBERS = ("runs/scanner-causal4", "runs/scanner-skip7", "runs/scanner-skip9")


class FusedScanner(ScannerRetriever):
    """The scanner's ranking fused with its own BM25 and dense feature rankings."""

    def __init__(self, weight: float) -> None:
        super().__init__()
        self.weight = weight

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        scanner = self.scanner
        logits = scanner.score(query, documents)
        vectors = np.concatenate([scanner.sentence_vectors(d) for d in documents])
        features = scanner.features.for_scan(query, documents, vectors, scanner.query_vector(query))
        lexical = features[:, FEATURE_NAMES.index("bm25_rank")]
        dense = features[:, FEATURE_NAMES.index("dense_rank")]
        return (
            self.weight / (RRF_K + ranks_of(logits))
            + 1 / (RRF_K + ranks_of(lexical))
            + 1 / (RRF_K + ranks_of(dense))
        )


def _standardised(logits: np.ndarray) -> np.ndarray:
    """Logits on one scale per query (mean 0, sd 1), so checkpoints can be averaged and a
    fixed penalty means the same on every query."""
    return (logits - logits.mean()) / (logits.std() + 1e-9)


class EnsembleScanner(ScannerRetriever):
    """The mean of several checkpoints' logits, each standardised over the query's sentences."""

    def __init__(self, directories: Sequence[Path | None]) -> None:
        self.scanners = [Scanner.from_pretrained(directory) for directory in directories]
        super().__init__(self.scanners[0])

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        return np.mean([_standardised(s.score(query, documents)) for s in self.scanners], axis=0)


class DiverseScanner(ScannerRetriever):
    """The scanner's standardised logits, each demoted by ``penalty`` per better-scored
    sentence of its own paragraph."""

    def __init__(self, penalty: float) -> None:
        super().__init__()
        self.penalty = penalty

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        standard = _standardised(self.scanner.score(query, documents))
        paragraph = np.concatenate(
            [[f"{i}/{p}" for p in d.sentence_paragraph] for i, d in enumerate(documents)]
        )
        scores = standard.copy()
        better: dict[str, int] = {}
        for i in np.argsort(-standard, kind="stable"):
            scores[i] -= self.penalty * better.get(paragraph[i], 0)
            better[paragraph[i]] = better.get(paragraph[i], 0) + 1
        return scores


def ensemble(members: int) -> Callable[[], Retriever]:
    return lambda: EnsembleScanner([None, *(Path(m) for m in MEMBERS[: members - 1])])


def fused(weight: float) -> Callable[[], Retriever]:
    return lambda: FusedScanner(weight)


def diverse(penalty: float) -> Callable[[], Retriever]:
    return lambda: DiverseScanner(penalty)


def _register_named_ensembles(argv: list[str]) -> list[str]:
    """Take every ``--ensemble NAME=DIR,DIR,...`` out of ``argv``; each registers
    ``scanner-ens-NAME``, the ensemble of those checkpoints (``-`` names the shipped one)."""
    rest = []
    arguments = iter(argv)
    for argument in arguments:
        if argument != "--ensemble":
            rest.append(argument)
            continue
        name, _, folders = next(arguments).partition("=")
        directories = [None if f == "-" else Path(f) for f in folders.split(",")]
        register(f"scanner-ens-{name}", lambda d=directories: EnsembleScanner(d))
    return rest


def main() -> None:
    argv = _register_named_ensembles(sys.argv[1:])
    for members in (3, 4):
        register(f"scanner-ens{members}", ensemble(members))
    for weight in (1, 2, 3):
        register(f"scanner-rrf{weight}", fused(weight))
    for penalty in (0.5, 1.0):
        register(f"scanner-div{penalty:g}", diverse(penalty))
    from longscan.cli import app

    app(argv)


if __name__ == "__main__":
    main()
