"""Per-sentence features the scanner reads beside the sentence vectors.

Dense vectors blur exact names and numbers, which decide many questions; these columns give
the scanner the lexical signal (BM25 and query-term coverage) and the document structure
(paragraph starts and positions) at every step, computed in milliseconds per query. A first
pass (BM25 + dense) also feeds its best sentences back: their new terms, mean vector and
capitalised names point at the second hop of multi-hop questions. The first pass's best
sentences are also matched word by word against the query (late interaction over MiniLM's
token states), which tells the scanner which close candidate actually answers.

Each family of columns is a named part in one module (``PARTS``, computed in that order:
a part may read the columns of those before it). ``FEATURE_NAMES`` is the columns' layout;
a checkpoint's config names the columns it reads, and loading computes exactly those.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from longscan.documents import Document
from longscan.encoders.minilm import SentenceEncoder
from longscan.models.config import ScannerConfig
from longscan.scanning.features.base import (
    FEATURE_COLUMNS,
    FEATURE_NAMES,
    N_FEATURES,
    Columns,
    FeatureInputs,
    FeaturePart,
)
from longscan.scanning.features.feedback import ENGLISH_STOP_WORDS, FEEDBACK, NAMES
from longscan.scanning.features.lexical import DENSE, LEXICAL, STRUCTURE
from longscan.scanning.features.paragraphs import PARAGRAPH, WINDOW
from longscan.scanning.features.query_parts import QUERY_PARTS
from longscan.scanning.features.token_match import (
    DEFAULT_TOKEN_MATCH,
    LEGACY_TOKEN_MATCH,
    TOKEN_MATCH,
    TokenMatch,
    TokenStates,
)
from longscan.scanning.first_stage import FirstStage, SentenceIndexes

PARTS: tuple[FeaturePart, ...] = (
    STRUCTURE,
    LEXICAL,
    DENSE,
    PARAGRAPH,
    FEEDBACK,
    NAMES,
    TOKEN_MATCH,
    QUERY_PARTS,
    WINDOW,
)
# what `longscan train` reads unless told: the shipped layout, the first 16 columns and the
# window column (docs/experiments.md). The query-part columns are opt-in (`--features 18`):
# three seeds with them lost more SQuAD questions than three without (docs/experiments.md)
TRAINED_FEATURES = (*FEATURE_NAMES[: FEATURE_NAMES.index("query_part_bm25")], "window_dense_rank")

__all__ = [
    "DEFAULT_TOKEN_MATCH",
    "ENGLISH_STOP_WORDS",
    "FEATURE_COLUMNS",
    "FEATURE_NAMES",
    "LEGACY_TOKEN_MATCH",
    "N_FEATURES",
    "PARTS",
    "TRAINED_FEATURES",
    "LexicalFeatures",
    "TokenMatch",
    "feature_columns",
    "feature_names",
]


def feature_names(config: ScannerConfig) -> tuple[str, ...]:
    """The columns a scanner network reads, by name (its config's, or the first
    ``n_features`` for a config written before configs named them)."""
    return config.feature_names or FEATURE_NAMES[: config.n_features]


def feature_columns(config: ScannerConfig) -> list[int]:
    """The columns a scanner network reads, as indices of ``FEATURE_NAMES``.

    Raises:
        ValueError: a name this longscan does not compute.
    """
    names = feature_names(config)
    unknown = [name for name in names if name not in FEATURE_NAMES]
    if unknown:
        raise ValueError(f"unknown feature columns {unknown}; longscan computes {FEATURE_NAMES}")
    return [FEATURE_NAMES.index(name) for name in names]


class LexicalFeatures:
    """Computes ``(n_sentences, N_FEATURES)`` features; per-document indexes are cached.

    Args:
        encoder: The sentence encoder whose token states give ``token_match``; without one,
            only the columns that read no tokens can be computed.
        max_cached: Document indexes kept.
        token_match: How the token-match columns read the first pass (a checkpoint's own).
    """

    def __init__(
        self,
        encoder: SentenceEncoder | None = None,
        max_cached: int = 64,
        token_match: TokenMatch = DEFAULT_TOKEN_MATCH,
    ) -> None:
        self.indexes = SentenceIndexes(max_cached)
        self.tokens = TokenStates(encoder, token_match)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's pooled vector (its token states are kept for ``token_match``)."""
        return self.tokens.query_vector(query)

    def first_stage(
        self,
        query: str,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
    ) -> FirstStage:
        """The query's BM25 and dense rankings over ``documents`` read as one sequence (BM25
        statistics are those of the whole sequence, as the scanner reads it)."""
        return FirstStage.run(query, self.indexes(documents), vectors, query_vector)

    def for_scan(
        self,
        query: str,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
        read: Sequence[int] = FEATURE_COLUMNS,
    ) -> np.ndarray:
        """``first_stage`` then ``columns``: every feature column of a query."""
        first = self.first_stage(query, documents, vectors, query_vector)
        return self.columns(first, documents, vectors, query_vector, read)

    def columns(
        self,
        first: FirstStage,
        documents: Sequence[Document],
        vectors: np.ndarray,
        query_vector: np.ndarray,
        read: Sequence[int] = FEATURE_COLUMNS,
    ) -> np.ndarray:
        """Every feature column, exactly as the scanner reads them; training and inference
        both come here, so the two cannot drift apart.

        Args:
            first: The query's first stage over ``documents``.
            vectors: ``(n_sentences, d)`` sentence vectors of ``documents``, in order.
            query_vector: ``(d,)``.
            read: The columns the caller reads (``feature_columns`` of a checkpoint's
                config); the on-demand parts (token match, query parts) are computed only
                when one of their columns is read, and left at 0 otherwise.

        Raises:
            ValueError: the token-match columns are read but no encoder was given.
        """
        columns = Columns(first.index.size)
        if not len(columns.array):
            return columns.array
        inputs = FeatureInputs(first, documents, vectors, query_vector, self.tokens)
        wanted = {FEATURE_NAMES[column] for column in read}
        for part in PARTS:
            if not part.on_demand or wanted.intersection(part.columns):
                part.compute(inputs, columns)
        return columns.array
