"""The single-pass scanner: encode sentences once, then score them all for a query.

Query-independent work (contextual sentence vectors) is cached per document on disk; a query
then costs one query encoding, cached BM25 features and one linear scan. The scan streams the
state-space model window by window, so memory does not grow with the document (no 120k cap),
or reproduces the paper's sliding-window mode for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Self

import numpy as np

from longscan.documents import Document
from longscan.encoders.bert import chosen_runtime
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.contextual import ContextualSentenceEncoder, Progress
from longscan.files import default_cache_dir
from longscan.models.onnx import OnnxScanNetwork, export_graphs, exportable
from longscan.scanning.checkpoint import (
    CheckpointInfo,
    ScanNetwork,
    default_checkpoint_dir,
    load_checkpoint,
    verified_info,
)
from longscan.scanning.features import LexicalFeatures, feature_columns

if TYPE_CHECKING:  # the re-ranker reads the checkpoint module, which imports this package
    from longscan.rerankers.rounds import Lexical, TwoRounds

ScanMode = Literal["stream", "sliding"]
CHARS_PER_TOKEN = 4.0  # English prose; only sizes the sliding windows, never the results


def moved_below(scores: np.ndarray, below: np.ndarray) -> np.ndarray:
    """``scores`` with the ``below`` ones lowered under every other, their order kept."""
    if not below.any():
        return scores
    moved = scores.copy()
    moved[below] -= scores.max() - scores.min() + 1.0
    return moved


def _no_sentences(query: str) -> np.ndarray:
    """The BM25 of an empty sequence: no scores."""
    return np.zeros(0)


@dataclass(frozen=True)
class SlidingWindow:
    """The paper's long-document mode: windows of ``window`` tokens every ``stride`` tokens.

    A sentence read by two windows gets the mean of its logits.
    """

    window_tokens: int = 120_000
    stride_tokens: int = 60_000

    def __post_init__(self) -> None:
        if not 0 < self.stride_tokens <= self.window_tokens:
            raise ValueError("need 0 < stride_tokens <= window_tokens")

    def windows(self, sentence_tokens: np.ndarray) -> list[tuple[int, int]]:
        """``[start, stop)`` sentence ranges covering every sentence at least once."""
        ends = np.cumsum(sentence_tokens)
        starts = ends - sentence_tokens
        total = float(ends[-1]) if len(ends) else 0.0
        ranges = []
        offset = 0.0
        while True:
            first = int(np.searchsorted(starts, offset, side="left"))
            stop = int(np.searchsorted(starts, offset + self.window_tokens, side="left"))
            ranges.append((first, max(stop, first + 1)))
            if offset + self.window_tokens >= total:
                return ranges
            offset += self.stride_tokens


class Scanner:
    """Scores every sentence of a document (or a collection read in order) for a query.

    Args:
        model: The trained scan network (or an ensemble of several), in PyTorch or in ONNX
            Runtime (``from_pretrained`` chooses, see ``longscan.models.onnx``).
        info: What the checkpoint says about the encoder and features.
        cache: Per-document sentence-vector cache (default: on disk).
        mode: ``"stream"`` (carry the state across windows; any length, constant memory) or
            ``"sliding"`` (the paper's 120k/60k-token windows, logits averaged).
        sliding: Window and stride for ``"sliding"``.
        window_sentences: Sentences per streamed block (bounds activation memory).
        rounds: The cross-encoder's two rounds over the scan's best sentences, or ``None``
            to return the scan's logits.
    """

    def __init__(
        self,
        model: ScanNetwork | OnnxScanNetwork,
        info: CheckpointInfo,
        cache: EmbeddingCache | None = None,
        mode: ScanMode = "stream",
        sliding: SlidingWindow | None = None,
        window_sentences: int = 1024,
        rounds: TwoRounds | None = None,
    ) -> None:
        if mode not in ("stream", "sliding"):
            raise ValueError(f"unknown scan mode {mode!r}; use 'stream' or 'sliding'")
        if not isinstance(model, OnnxScanNetwork):
            from longscan.devices import torch_device

            model = model.eval().to(torch_device())
        self.model = model
        self.info = info
        self.cache = cache or EmbeddingCache(default_cache_dir() / "sentences")
        self.mode = mode
        self.sliding = sliding or SlidingWindow()
        self.window_sentences = window_sentences
        self.rounds = rounds
        self.encoder = ContextualSentenceEncoder.from_name(info.encoder, info.encoder_adapter)
        if self.encoder.name != info.encoder:
            raise ValueError(
                f"the checkpoint was trained on {info.encoder!r} vectors, "
                f"this scanner makes {self.encoder.name!r}"
            )
        self.features = LexicalFeatures(self.encoder.encoder, token_match=info.token_match)

    @classmethod
    def from_pretrained(
        cls, directory: Path | None = None, rescore: bool = False, **kwargs: object
    ) -> Self:
        """Load the shipped checkpoint (or the one in ``directory``); with ``rescore``, the
        shipped cross-encoder re-scores the scan's best sentences (``shipped_rounds``).

        Where ``chosen_runtime()`` is ``onnx`` (a CPU) and the network streams in one causal
        pass, it runs through ONNX Runtime from graphs exported once into the cache.

        Raises:
            CheckpointError: missing, corrupt or mismatched checkpoint files.
        """
        from longscan.rerankers.rounds import shipped_rounds

        directory = Path(directory) if directory is not None else default_checkpoint_dir()
        info, weights_sha256 = verified_info(directory)
        model: ScanNetwork | OnnxScanNetwork
        if chosen_runtime() == "onnx" and exportable(info.config):
            graphs = export_graphs(
                lambda: load_checkpoint(directory)[0],
                weights_sha256,
                info.members,
                default_cache_dir(),
            )
            model = OnnxScanNetwork(info.config, graphs)
        else:
            model, info = load_checkpoint(directory)
        if rescore and "rounds" not in kwargs:
            kwargs["rounds"] = shipped_rounds()
        return cls(model, info, **kwargs)  # type: ignore[arg-type]

    def sentence_vectors(
        self, document: Document, progress: bool = False, on_progress: Progress | None = None
    ) -> np.ndarray:
        """``(n_sentences, d)`` contextual vectors, encoded once per document text."""
        return self.encoder.cached_vectors(document, self.cache, progress, on_progress)

    def prepare(self, documents: Sequence[Document], on_progress: Progress | None = None) -> None:
        """Encode the documents not read before (minutes for a book), so that a question's
        scan finds every vector cached; ``on_progress`` hears ``(done, total)`` sentences
        over all of them, first ``(0, total)``, and nothing when every vector is cached."""
        unread = [d for d in documents if self.cache.get(self.encoder.cache_key(d)) is None]
        if not unread:
            return
        total = sum(len(document.sentences) for document in unread)
        if on_progress is not None:
            on_progress(0, total)
        before = 0
        for document in unread:

            def advance(done: int, _total: int, before: int = before) -> None:
                if on_progress is not None:
                    on_progress(before + done, total)

            self.sentence_vectors(document, on_progress=advance)
            before += len(document.sentences)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's vector; its token states come from the same pass (``token_match``)."""
        return self.features.query_vector(query)

    def score(
        self, query: str, documents: Sequence[Document], progress: bool = False
    ) -> np.ndarray:
        """Scores ``(total sentences,)`` for the documents read one after another: the
        scan's logits, re-scored by ``rounds`` when the scanner has them."""
        logits, lexical = self.scan(query, documents, progress)
        if self.rounds is None:
            return logits
        return self.rounds(query, documents, logits, lexical)

    def scan(
        self, query: str, documents: Sequence[Document], progress: bool = False
    ) -> tuple[np.ndarray, Lexical]:
        """The scan's logits before any re-scoring, and the first stage's BM25 for a
        free-text query (what the re-scorer's second round queries).

        One straight path: sentence vectors, the first stage (BM25 and dense, once), the
        feature columns from it, then the scan. Sentences that add nothing to what ranks
        above them (``FirstStage.redundant``: the question's own words alone, a line read
        before) are moved below every other, in their order: each would take a place in the
        reader's budget and tell it nothing. A table's title or header line then stands for
        its table: its row the first pass ranks best is lifted to its place
        (``FirstStage.rows_lifted``).
        """
        parts = [self.sentence_vectors(document, progress) for document in documents]
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.encoder.dim), np.float32)
        if len(vectors) == 0:
            return np.zeros(0), _no_sentences
        query_vector = self.query_vector(query)
        first = self.features.first_stage(query, documents, vectors, query_vector)
        read = feature_columns(self.model.config)  # what the checkpoint was trained on
        features = self.features.columns(first, documents, vectors, query_vector, read)
        logits = self._logits(documents, vectors, query_vector, features[:, read])
        logits = moved_below(logits, first.redundant(logits))
        return first.rows_lifted(logits), first.index.lexical

    def _logits(
        self,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
        features: np.ndarray,
    ) -> np.ndarray:
        """The scan of the whole sequence, streamed or in the paper's sliding windows."""
        if self.mode == "stream":
            return self._scan(vectors, query_vector, features)
        tokens = np.concatenate([np.diff(d.sentences, axis=1)[:, 0] for d in documents])
        tokens = tokens / CHARS_PER_TOKEN
        total = np.zeros(len(vectors))
        seen = np.zeros(len(vectors))
        for start, stop in self.sliding.windows(np.maximum(tokens, 1.0)):
            total[start:stop] += self._scan(vectors[start:stop], query_vector, features[start:stop])
            seen[start:stop] += 1
        return total / seen

    def _scan(self, vectors: np.ndarray, query: np.ndarray, features: np.ndarray) -> np.ndarray:
        if isinstance(self.model, OnnxScanNetwork):
            return self.model.scan(vectors, query, features)
        import torch

        device = next(self.model.parameters()).device
        with torch.inference_mode():
            logits = self.model.scan(
                torch.from_numpy(vectors)[None].to(device),
                torch.from_numpy(query)[None].to(device),
                torch.from_numpy(features)[None].to(device)
                if self.model.config.n_features
                else None,
                window=self.window_sentences,
            )
        return logits[0].double().cpu().numpy()
