"""Retrievers by name, so the CLI, the evaluator and the benchmarks name them the same way.

A name is a registered name (``longscan retrievers`` lists them), or ``scanner:DIR`` /
``scanner-sliding:DIR`` / ``scanner-rerank:DIR`` for a scanner checkpoint written by
``longscan train`` (``scanner-rerank``: its best sentences re-scored by the cross-encoder),
``spscanner:DIR`` / ``spscanner-sliding:DIR`` for the paper's token-level scanner (a
checkpoint converted by ``longscan spscanner-convert``; it has no default), ``cfic`` /
``cfic:MODEL`` for chunking-free in-context retrieval on a causal LM (``cfic``: the default
model with the packaged fine-tuning; ``cfic:MODEL``: that model as it is), ``icr-attention`` /
``icr-attention:MODEL`` for chunks ranked by its attention, ``icr-id`` / ``icr-id-c`` /
``icr-id-q`` (``:MODEL``) for the chunks it cites in the paper's ``[DOC i]`` formats, or
``dense-sentence:MODEL`` / ``dense-chunk:MODEL`` / ``hybrid-sentence:MODEL`` /
``hybrid-chunk:MODEL`` for the baselines on any sentence-transformers model (a name in the
local Hugging Face cache, or a folder), loaded offline from safetensors. ``dense-ft-sentence``
and ``hybrid-ft-sentence`` read the fine-tuned bi-encoder the shipped scanner reads.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from longscan.retrievers.base import Retriever
from longscan.retrievers.bm25 import BM25Retriever
from longscan.retrievers.dense import DenseRetriever
from longscan.retrievers.hybrid import HybridRetriever
from longscan.retrievers.simple import RandomRetriever

if TYPE_CHECKING:
    from longscan.incontext.reader import InContextReader

_FACTORIES: dict[str, Callable[[], Retriever]] = {
    "bm25-sentence": lambda: BM25Retriever("sentence"),
    "bm25-chunk": lambda: BM25Retriever("chunk"),
    "dense-sentence": lambda: DenseRetriever("sentence"),
    "dense-chunk": lambda: DenseRetriever("chunk"),
    "hybrid-sentence": lambda: HybridRetriever("sentence"),
    "hybrid-chunk": lambda: HybridRetriever("chunk"),
    "random": lambda: RandomRetriever("sentence"),
}


def _scanner(
    checkpoint: Path | None = None, mode: str = "stream", rescore: bool = False
) -> Retriever:
    """The scanner on the shipped checkpoint, or on ``checkpoint``; ``rescore``: with the
    shipped cross-encoder's two rounds over its best sentences."""
    from longscan.retrievers.scanner import ScannerRetriever
    from longscan.scanning.scanner import Scanner

    return ScannerRetriever(Scanner.from_pretrained(checkpoint, rescore, mode=mode))


def _tuned_dense() -> DenseRetriever:
    """Dense retrieval over sentences with the fine-tuned bi-encoder the shipped scanner reads
    (the adapter copied into its checkpoint): the baseline that shows what the tuned vectors
    alone give.

    Raises:
        CheckpointError: the shipped checkpoint carries no encoder adapter, or a corrupt one.
    """
    from longscan.encoders.minilm import get_encoder
    from longscan.scanning.checkpoint import CheckpointError, default_checkpoint_dir, verified_info

    adapter = verified_info(default_checkpoint_dir())[0].encoder_adapter
    if adapter is None:
        raise CheckpointError("the shipped scanner reads the stock encoder: no tuned baseline")
    return DenseRetriever("sentence", encoder=get_encoder(adapter=str(adapter)))


def _rerank() -> Retriever:
    from longscan.retrievers.rerank import hybrid_rerank

    return hybrid_rerank()


def _spscanner(checkpoint: Path, mode: str) -> Retriever:
    """The paper's token-level scanner on a converted checkpoint."""
    from longscan.retrievers.spscanner import SPScannerRetriever
    from longscan.scanning.spscanner import SPScanner

    scanner = SPScanner.from_pretrained(checkpoint, mode=mode)  # type: ignore[arg-type]
    return SPScannerRetriever(scanner, progress=True)  # minutes per book on a CPU


# retriever name → how it is built on a checkpoint folder
_CHECKPOINT_KINDS: dict[str, Callable[[Path], Retriever]] = {
    "scanner": lambda path: _scanner(path, "stream", False),
    "scanner-sliding": lambda path: _scanner(path, "sliding", False),
    "scanner-rerank": lambda path: _scanner(path, "stream", True),
    "spscanner": lambda path: _spscanner(path, "stream"),
    "spscanner-sliding": lambda path: _spscanner(path, "sliding"),
}


def _cfic(model: str | None) -> Retriever:
    """Chunking-free in-context retrieval on a causal LM: by default the packaged one with
    the packaged CFIC fine-tuning merged in; a model named is read as it is."""
    from longscan.incontext.cfic import CFIC, PACKAGED_ADAPTER
    from longscan.incontext.lm import DEFAULT_MODEL, load_causal_lm
    from longscan.retrievers.cfic import CFICRetriever

    if model is None:
        lm = load_causal_lm(DEFAULT_MODEL, adapter=str(PACKAGED_ADAPTER))
    else:
        lm = load_causal_lm(model)
    return CFICRetriever(CFIC(lm))


def _attention(model: str | None) -> Retriever:
    """Chunks ranked by a causal LM's attention to their ``[DOC i]`` blocks."""
    from longscan.incontext.attention import AttentionRanker
    from longscan.incontext.lm import DEFAULT_MODEL, load_causal_lm
    from longscan.retrievers.attention import AttentionRetriever

    return AttentionRetriever(AttentionRanker(load_causal_lm(model or DEFAULT_MODEL)))


@cache
def in_context_reader(model: str | None) -> InContextReader:
    """One reader per model, shared by the ``[DOC i]`` formats (and by benchmarks that score
    their answers), so the passages are read once for all of them."""
    from longscan.incontext.lm import DEFAULT_MODEL, load_causal_lm
    from longscan.incontext.reader import InContextReader

    return InContextReader(load_causal_lm(model or DEFAULT_MODEL))


def _citations(fmt: str) -> Callable[[str | None], Retriever]:
    def build(model: str | None) -> Retriever:
        from longscan.incontext.docids import Format
        from longscan.retrievers.docids import CitationRetriever

        return CitationRetriever(in_context_reader(model), Format(fmt))

    return build


# retriever name → how it is built on a causal LM (``NAME`` or ``NAME:MODEL``); an LM in
# process, so none of them is in ``available()``'s quick list
LM_KINDS: dict[str, Callable[[str | None], Retriever]] = {
    "cfic": _cfic,
    "icr-attention": _attention,
    "icr-id": _citations("ID"),
    "icr-id-c": _citations("ID+C"),
    "icr-id-q": _citations("ID+Q"),
}


BASELINES = tuple(_FACTORIES)
_FACTORIES["scanner"] = _scanner
_FACTORIES["scanner-sliding"] = lambda: _scanner(mode="sliding")
# the scan's best re-scored by the cross-encoder (opt-in: a re-query costs about 1.9x)
_FACTORIES["scanner-rerank"] = lambda: _scanner(rescore=True)
_FACTORIES["rerank"] = _rerank  # the hybrid's 50 best re-scored: what the scan must beat
_FACTORIES["dense-ft-sentence"] = _tuned_dense
_FACTORIES["hybrid-ft-sentence"] = lambda: HybridRetriever("sentence", dense=_tuned_dense())
DEFAULT_RETRIEVER = "scanner"


def available() -> list[str]:
    return list(_FACTORIES)


def _needs_checkpoint() -> list[str]:
    """Checkpoint kinds with no default: no checkpoint of theirs ships with longscan."""
    return [kind for kind in _CHECKPOINT_KINDS if kind not in _FACTORIES]


def name_forms() -> list[str]:
    """The names beyond ``available()``: those that need a checkpoint folder, and those
    read by a causal LM in process (the packaged one, or ``:MODEL``)."""
    return [f"{kind}:DIR" for kind in _needs_checkpoint()] + [f"{k}[:MODEL]" for k in LM_KINDS]


def register(name: str, factory: Callable[[], Retriever]) -> None:
    """Add a retriever under ``name`` (later ones, such as the scanner, plug in here)."""
    _FACTORIES[name] = factory


def parse_name(name: str) -> tuple[str, Path | None]:
    """``(registered name, checkpoint folder or encoder model, or None)``: the one parser of
    retriever names.

    Raises:
        ValueError: an unknown name (the message lists the known ones), or a checkpoint or
            model given to a retriever that takes none, or an empty one.
    """
    base, sep, checkpoint = name.partition(":")
    if base in _needs_checkpoint() and not sep:
        raise ValueError(
            f"{base!r} needs a checkpoint folder: {base}:DIR (convert a published SPScanner "
            "checkpoint with `longscan spscanner-convert`)"
        )
    if base not in _FACTORIES and base not in _CHECKPOINT_KINDS and base not in LM_KINDS:
        raise ValueError(
            f"unknown retriever {name!r}; choose one of {', '.join(_FACTORIES)}, "
            f"or {' or '.join(f'{kind}:DIR' for kind in _CHECKPOINT_KINDS)} for a checkpoint, "
            f"or {' or '.join(f'{kind}[:MODEL]' for kind in LM_KINDS)} on a causal LM"
        )
    if not sep:
        return base, None
    if base not in _CHECKPOINT_KINDS and base not in ENCODER_KINDS and base not in LM_KINDS:
        raise ValueError(f"retriever {base!r} takes no checkpoint or model (given {name!r})")
    if not checkpoint.strip():
        what = "model" if base in ENCODER_KINDS or base in LM_KINDS else "checkpoint folder"
        raise ValueError(f"{name!r}: name the {what} after the colon")
    return base, Path(checkpoint)


def _on_encoder(base: str, model: str) -> Retriever:
    """A dense or hybrid baseline reading ``model``'s vectors."""
    from longscan.encoders.external import ExternalEncoder

    unit = "chunk" if base.endswith("-chunk") else "sentence"
    dense = DenseRetriever(unit, encoder=ExternalEncoder(model))
    return dense if base.startswith("dense") else HybridRetriever(unit, dense=dense)


ENCODER_KINDS = ("dense-sentence", "dense-chunk", "hybrid-sentence", "hybrid-chunk")


def get_retriever(name: str) -> Retriever:
    """Build the retriever called ``name`` (see the module docstring for ``scanner:DIR``).

    Raises:
        ValueError: an unknown name; ``CheckpointError`` (a ValueError) for a checkpoint
            folder that cannot be loaded.
    """
    base, argument = parse_name(name)
    if base in LM_KINDS:
        return LM_KINDS[base](name.partition(":")[2] or None)  # as written: a name or a file
    if argument is None:
        return _FACTORIES[base]()
    if base in ENCODER_KINDS:
        return _on_encoder(base, name.partition(":")[2])  # as written: a name or a folder
    return _CHECKPOINT_KINDS[base](argument)
