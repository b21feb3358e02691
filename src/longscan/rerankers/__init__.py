"""Re-scorers that read a first stage's best candidates closely (one model pass each)."""

from longscan.encoders.adapter import AdapterError
from longscan.rerankers.cross_encoder import (
    CrossEncoderReranker,
    get_reranker,
    join_hop,
    sentence_in_context,
)

__all__ = [
    "AdapterError",
    "CrossEncoderReranker",
    "get_reranker",
    "join_hop",
    "sentence_in_context",
]
