"""Re-scorers that read a first stage's best candidates closely (one model pass each)."""

from longscan.rerankers.cross_encoder import (
    CrossEncoderReranker,
    RerankerError,
    get_reranker,
    join_hop,
    sentence_in_context,
)

__all__ = [
    "CrossEncoderReranker",
    "RerankerError",
    "get_reranker",
    "join_hop",
    "sentence_in_context",
]
