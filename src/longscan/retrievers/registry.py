"""Retrievers by name, so the CLI, the evaluator and the benchmarks name them the same way."""

from __future__ import annotations

from collections.abc import Callable

from longscan.retrievers.base import Retriever
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.dense import DenseRetriever
from longscan.retrievers.hybrid import HybridRetriever
from longscan.retrievers.simple import RandomRetriever

_FACTORIES: dict[str, Callable[[], Retriever]] = {
    "bm25-sentence": lambda: BM25Retriever("sentence"),
    "bm25-chunk": lambda: BM25Retriever("chunk"),
    "dense-sentence": lambda: DenseRetriever("sentence"),
    "dense-chunk": lambda: DenseRetriever("chunk"),
    "hybrid-sentence": lambda: HybridRetriever("sentence"),
    "hybrid-chunk": lambda: HybridRetriever("chunk"),
    "random": lambda: RandomRetriever("sentence"),
}


def _scanner() -> Retriever:
    from longscan.retrievers.scanner import ScannerRetriever

    return ScannerRetriever()


def _scanner_sliding() -> Retriever:
    from longscan.retrievers.scanner import ScannerRetriever
    from longscan.scanning.scanner import Scanner

    return ScannerRetriever(Scanner.from_pretrained(mode="sliding"))


BASELINES = tuple(_FACTORIES)
_FACTORIES["scanner"] = _scanner
_FACTORIES["scanner-sliding"] = _scanner_sliding
DEFAULT_RETRIEVER = "scanner"


def available() -> list[str]:
    return list(_FACTORIES)


def register(name: str, factory: Callable[[], Retriever]) -> None:
    """Add a retriever under ``name`` (later ones, such as the scanner, plug in here)."""
    _FACTORIES[name] = factory


def get_retriever(name: str) -> Retriever:
    """Build the retriever called ``name``; unknown names list the known ones."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown retriever {name!r}; choose one of {', '.join(_FACTORIES)}")
    return _FACTORIES[name]()
