"""Dense retrieval with the packaged all-MiniLM-L6-v2 (or any sentence-transformers model),
over sentences or 300-word chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache, spans_digest
from longscan.encoders.external import TextEncoder
from longscan.encoders.minilm import DEFAULT_ENCODER, cache_name, get_encoder
from longscan.files import default_cache_dir
from longscan.retrievers.base import Retriever, UnitKind, Units


class DenseRetriever(Retriever):
    """Cosine similarity between the query and each unit, each unit encoded on its own.

    Unit vectors are cached per document (content hash → safetensors), so a second query on
    the same document only encodes the query.

    Args:
        unit: ``"sentence"`` or ``"chunk"``. Chunks longer than the encoder's 256-token window
            are truncated by the encoder, as in any standard dense-chunk pipeline.
        cache: Embedding cache; defaults to ``default_cache_dir()/embeddings``.
        encoder: The packaged encoder's name, or a loaded encoder (a quantised MiniLM, any
            sentence-transformers model as an ``ExternalEncoder``); its name keys the cache.
        progress: Show a progress bar while encoding.
    """

    name: ClassVar[str] = "dense"

    def __init__(
        self,
        unit: UnitKind = "sentence",
        cache: EmbeddingCache | None = None,
        encoder: str | TextEncoder = DEFAULT_ENCODER,
        progress: bool = False,
    ) -> None:
        self.unit = unit
        self.cache = cache or EmbeddingCache(default_cache_dir() / "embeddings")
        self._encoder = None if isinstance(encoder, str) else encoder
        self.encoder_name = encoder if isinstance(encoder, str) else encoder.name
        self.progress = progress
        self.encoded_units = 0

    @property
    def encoder(self) -> TextEncoder:
        return self._encoder or get_encoder(self.encoder_name)

    def document_vectors(self, documents: Sequence[Document], units: Units) -> np.ndarray:
        """``(len(units), dim)`` vectors, from the cache where possible."""
        parts = []
        cached_as = cache_name(self.encoder_name)  # reads the runtime's settings: once
        for index, document in enumerate(documents):
            selected = np.flatnonzero(units.doc_index == index)
            spans = units.spans[selected]
            key = EmbeddingCache.key(
                "dense",
                cached_as,
                self.unit,
                document.content_hash,
                spans_digest(spans),
            )
            vectors = self.cache.get(key)
            if vectors is None:
                texts = [units.texts[i] for i in selected.tolist()]
                vectors = self.encoder.encode(texts, progress=self.progress)
                self.encoded_units += len(texts)
                self.cache.put(key, vectors)
            parts.append(vectors)
        return np.concatenate(parts) if parts else np.zeros((0, self.encoder.dim), np.float32)

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        vectors = self.document_vectors(documents, units)
        query_vector = self.encoder.encode([query])[0]
        return vectors @ query_vector
