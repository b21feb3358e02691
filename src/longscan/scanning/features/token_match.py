"""Late interaction over the first pass's best sentences: does each word of the question
find its counterpart in the sentence?

Among close candidates, BM25 counts shared words and the dense cosine compares whole-sentence
averages; neither checks that each word of the question finds its counterpart ("invaded" ~
"invasion", "year" ~ "1066"). MaxSim does: the mean over query tokens of the best cosine with
any sentence token. Only a few candidates are encoded, so a re-query stays cheap.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from longscan.documents import SentencePositions
from longscan.encoders.minilm import MAX_TOKENS, SentenceEncoder
from longscan.scanning.features.base import Columns, FeatureInputs, FeaturePart
from longscan.scanning.first_stage import rank_feature

TOKEN_CACHE_SIZE = 2048  # sentences whose token states are kept (re-queries, training)


@dataclass(frozen=True)
class TokenMatch:
    """How ``token_match`` reads the first pass: its ``candidates`` best sentences, each cut
    to ``max_tokens`` word pieces, against the query's first ``query_tokens``. A checkpoint
    records the values it was trained with, since other values give other columns (fewer
    make a re-query cheaper).

    The query is not cut like a sentence: a prompt often states its question after an
    instruction ("Review the statements above ... What is the Basic EPS of X?"), and cut at
    32 pieces it kept only the instruction. A query reads the encoder's whole window.
    """

    candidates: int = 16
    max_tokens: int = 32  # about a line and a half of text
    query_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        for name in ("candidates", "max_tokens", "query_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"token match {name} must be a positive integer, not {value!r}")
        if self.query_tokens > MAX_TOKENS:
            raise ValueError(
                f"token match query_tokens must be at most the encoder's {MAX_TOKENS} pieces, "
                f"not {self.query_tokens}"
            )

    @classmethod
    def recorded(cls, settings: dict[str, Any]) -> TokenMatch:
        """The settings a checkpoint's config records. Configs written before
        ``query_tokens`` existed cut the query at ``max_tokens``, as their training did."""
        if not isinstance(settings, dict):
            raise TypeError(f"token match settings must be a mapping, not {settings!r}")
        return cls(**{"query_tokens": settings.get("max_tokens", cls.max_tokens), **settings})


DEFAULT_TOKEN_MATCH = TokenMatch()  # what training computes
# what checkpoints whose config records no token match were trained with
LEGACY_TOKEN_MATCH = TokenMatch(candidates=20, max_tokens=48, query_tokens=48)


class TokenStates:
    """The encoder's token states of texts cut to a number of pieces, each text encoded once
    while it stays among the ``TOKEN_CACHE_SIZE`` most recently used, and how the
    token-match columns read them.

    Args:
        encoder: The sentence encoder; without one, the columns that read tokens (and the
            query parts) cannot be computed.
        token_match: How the token-match columns read the first pass (a checkpoint's own).
    """

    def __init__(self, encoder: SentenceEncoder | None, token_match: TokenMatch) -> None:
        self.encoder = encoder
        self.token_match = token_match
        self._tokens: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()  # (text, cut)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's pooled vector; its token states, from the same forward pass, wait in
        the cache for ``token_match``."""
        if self.encoder is None:
            raise ValueError("encoding a query needs the sentence encoder")
        vector, tokens = self.encoder.vector_and_tokens(query, self.token_match.query_tokens)
        self.remember((query, self.token_match.query_tokens), tokens)
        return vector

    def of(self, texts: list[str], max_tokens: int) -> list[np.ndarray]:
        """Token states of ``texts`` cut to ``max_tokens``."""
        if self.encoder is None:
            raise ValueError("the token_match features need the sentence encoder")
        missing = list(dict.fromkeys(t for t in texts if (t, max_tokens) not in self._tokens))
        encoded = self.encoder.token_vectors(missing, max_tokens)
        for text, tokens in zip(missing, encoded, strict=True):
            self._tokens[text, max_tokens] = tokens
        result = []
        for text in texts:
            self._tokens.move_to_end((text, max_tokens))
            result.append(self._tokens[text, max_tokens])
        self._trim()
        return result

    def remember(self, key: tuple[str, int], tokens: np.ndarray) -> None:
        self._tokens[key] = tokens
        self._tokens.move_to_end(key)
        self._trim()

    def _trim(self) -> None:
        while len(self._tokens) > TOKEN_CACHE_SIZE:
            self._tokens.popitem(last=False)


def token_match(inputs: FeatureInputs, columns: Columns) -> None:
    """``token_match`` and ``token_match_rank`` for the first pass's best sentences."""
    states, settings = inputs.tokens, inputs.tokens.token_match
    top = np.sort(inputs.first_pass[: settings.candidates])
    texts = SentencePositions(inputs.documents).texts(top)
    query_tokens = states.of([inputs.first.query], settings.query_tokens)[0]
    candidates = states.of(texts, settings.max_tokens)
    match = np.array([max_sim(query_tokens, tokens) for tokens in candidates])
    columns.array[top, columns.index("token_match")] = match
    columns.array[top, columns.index("token_match_rank")] = rank_feature(match)


def max_sim(query: np.ndarray, sentence: np.ndarray) -> float:
    """Late interaction of unit token vectors ``(q, d)`` and ``(s, d)``: the mean over query
    tokens of their best cosine in the sentence (0 when either has no token)."""
    if not len(query) or not len(sentence):
        return 0.0
    return float((query @ sentence.T).max(axis=1).mean())


TOKEN_MATCH = FeaturePart(
    "token_match",
    ("token_match", "token_match_rank"),
    "the query's and the first pass's best sentences' token states (the encoder)",
    token_match,
    on_demand=True,
)
