"""Frozen local text encoders and their on-disk caches."""

from longscan.encoders.cache import EmbeddingCache, default_cache_dir
from longscan.encoders.minilm import DEFAULT_ENCODER, SentenceEncoder, get_encoder

__all__ = [
    "DEFAULT_ENCODER",
    "EmbeddingCache",
    "SentenceEncoder",
    "default_cache_dir",
    "get_encoder",
]
