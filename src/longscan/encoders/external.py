"""Any sentence-transformers model as the baselines' encoder, by name or folder, offline.

``dense-sentence:MODEL`` (and ``dense-chunk:``, ``hybrid-sentence:``, ``hybrid-chunk:``)
reads MODEL's vectors instead of the packaged MiniLM's. The model loads from the local
Hugging Face cache or a folder, never from the network, and from safetensors weights only:
a folder holding only a pickled ``pytorch_model.bin`` is refused, not unpickled.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np

from longscan.encoders.minilm import unit_rows

PREFIX = "st:"  # external encoders' names (and so their cache keys) start with it


class TextEncoder(Protocol):
    """What a baseline needs of an encoder: a name that keys its caches, and vectors."""

    name: str
    dim: int

    def encode(
        self, texts: list[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray: ...


def _folder_digest(folder: Path) -> str:
    """Names, sizes and modification times of a model folder's files: changed weights give
    another cache key, without hashing gigabytes on every load."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        status = file.stat()
        digest.update(
            f"{file.relative_to(folder)}\0{status.st_size}\0{status.st_mtime_ns}\n".encode()
        )
    return digest.hexdigest()[:16]


class ExternalEncoder:
    """A sentence-transformers model, its vectors L2-normalised like the packaged MiniLM's.

    Raises:
        ValueError: the model is not in the local cache or folder, or has no safetensors
            weights.
    """

    def __init__(self, model: str) -> None:
        from sentence_transformers import SentenceTransformer

        from longscan.devices import torch_device

        folder = Path(model).expanduser()
        if folder.is_dir() and not any(folder.rglob("*.safetensors")):
            raise ValueError(
                f"{model}: no .safetensors weights; longscan does not unpickle model files "
                "(convert them once with safetensors, or save the model again)"
            )
        try:
            self.model = SentenceTransformer(
                str(folder) if folder.is_dir() else model,
                device=torch_device(),
                local_files_only=True,
                model_kwargs={"use_safetensors": True},
            )
        except (OSError, ValueError) as error:
            raise ValueError(
                f"cannot load the sentence-transformers model {model!r} offline: {error}. "
                "Give a folder holding the model, or download it once into the Hugging Face "
                "cache on a machine that is online"
            ) from None
        identity = f"{folder.resolve()}@{_folder_digest(folder)}" if folder.is_dir() else model
        self.name = PREFIX + identity
        dimension = getattr(self.model, "get_embedding_dimension", None) or (
            self.model.get_sentence_embedding_dimension  # its name before sentence-transformers 6
        )
        self.dim = int(dimension() or 0)

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(texts, batch_size=batch_size, show_progress_bar=progress)
        return unit_rows(np.asarray(vectors, dtype=np.float32))


PACKAGED = "minilm"  # the packaged all-MiniLM-L6-v2, by the short name banks record


def canonical_encoder(spec: str) -> str:
    """One spelling per model: an existing folder by its absolute path, the packaged MiniLM
    as ``minilm``, any other name as given (a Hugging Face cache name)."""
    from longscan.encoders.minilm import DEFAULT_ENCODER

    if spec in (PACKAGED, DEFAULT_ENCODER):
        return PACKAGED
    folder = Path(spec).expanduser()
    return str(folder.resolve()) if folder.is_dir() else spec


@cache
def load_text_encoder(spec: str) -> TextEncoder:
    """The encoder ``spec`` names (see ``canonical_encoder``), loaded once per process."""
    if canonical_encoder(spec) == PACKAGED:
        from longscan.encoders.minilm import get_encoder

        return get_encoder()
    return ExternalEncoder(spec)


def encoder_dim(spec: str) -> int:
    """The vectors' length, without loading the packaged model for it."""
    if canonical_encoder(spec) == PACKAGED:
        from longscan.encoders.minilm import EMBEDDING_DIM

        return EMBEDDING_DIM
    return load_text_encoder(spec).dim
