"""The cross-encoder re-scorer through ONNX Runtime, without torch or transformers.

`ask` judges every answer's evidence (``rerankers.abstention``); importing torch,
transformers and sentence-transformers for that would cost a command-line question seconds
(their imports once made a second question take 11 s of the 18). The adapter is merged and
exported once through PyTorch, like the encoder (``encoders.bert.onnx_export``), into a
hash-checked file named by everything its graph depends on; later questions read pairs with
the ``tokenizers`` library and ONNX Runtime alone. The graph stores its weights in fewer
bits (``encoders.storage``) and computes in float32; its scores stay within a few
hundredths of the PyTorch model's (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from longscan.documents import Document
from longscan.encoders.adapter import AdapterConfig, checked_adapter_config
from longscan.encoders.bert import (
    adapter_onnx,
    default_threads,
    onnx_session,
    tokenizer_file,
    trace_bert,
)
from longscan.encoders.storage import RESCORER_STORAGE
from longscan.rerankers.cross_encoder import PACKAGED, query_tail, sentence_in_context

REBUILD = "longscan train-reranker"
BATCH_PAIRS = 16


def onnx_cross_encoder(
    directory: Path = PACKAGED,
    cache_dir: Path | None = None,
    storage: str | None = RESCORER_STORAGE,
) -> Path:
    """The ONNX file of the cross-encoder in ``directory`` (its adapter merged), exported on
    first use and read from the cache afterwards; ``storage``: how it keeps its weights
    (``encoders.storage``; None: float32, the reference the shipped form is measured by)."""
    config, digest = checked_adapter_config(directory, REBUILD)
    return _exported(directory, config, digest, cache_dir, storage)


def _exported(
    directory: Path,
    config: AdapterConfig,
    digest: str,
    cache_dir: Path | None,
    storage: str | None,
) -> Path:
    """``onnx_cross_encoder`` for an adapter already checked (its weights hashed once)."""
    return adapter_onnx(
        "cross-minilm",
        digest,
        config.max_length,
        lambda target: _export(target, directory),
        storage,
        cache_dir,
    )


def _export(path: Path, directory: Path) -> None:
    """Trace the merged PyTorch cross-encoder's logits to ONNX at ``path``."""
    import torch

    from longscan.rerankers.cross_encoder import CrossEncoderReranker

    model = CrossEncoderReranker.load(directory, bfloat16=False).model[0].model.to("cpu").eval()
    ids = torch.tensor([[101, 2023, 102, 2003, 102], [101, 2023, 102, 102, 0]])
    types = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 1, 0]])
    example = (ids, (ids != 0).long(), types)  # padded pairs: the mask and types stay inputs
    trace_bert(model, lambda outputs: outputs.logits[:, 0], example, path, ("logits", {0: "rows"}))


class OnnxCrossEncoder:
    """Scores (query, passage) pairs as ``CrossEncoderReranker.score`` does, through ONNX
    Runtime; passages are read as its adapter was trained (``passage``)."""

    def __init__(self, directory: Path = PACKAGED, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.config, self.digest = checked_adapter_config(directory, REBUILD)
        exported = _exported(directory, self.config, self.digest, None, RESCORER_STORAGE)
        self.session = onnx_session(exported, threads or default_threads())
        saved = tokenizer_file().read_text(encoding="utf-8")
        self.tokenizer = Tokenizer.from_str(saved)
        # the pair truncation of transformers' BertTokenizerFast, which the model was trained on
        self.tokenizer.enable_truncation(self.config.max_length, strategy="longest_first")
        self.tokenizer.enable_padding(pad_id=self.tokenizer.token_to_id("[PAD]"))
        self.query_tokenizer = Tokenizer.from_str(saved)
        self.query_tokenizer.no_truncation()
        self.query_tokenizer.no_padding()  # the file pads to 128: pads would count as pieces

    def fit_query(self, query: str) -> str:
        """``query`` as a pair reads it whole (``cross_encoder.query_tail``)."""
        encoding = self.query_tokenizer.encode(query, add_special_tokens=False)
        return query_tail(query, encoding.offsets)

    def passage(self, document: Document, index: int) -> str:
        return sentence_in_context(document, index, headings=self.config.headings)

    def feeds(self, query: str, passages: Sequence[str]) -> dict[str, np.ndarray]:
        """The graph's inputs for the pairs (``query``, passage), padded to the longest."""
        encodings = self.tokenizer.encode_batch([(query, passage) for passage in passages])
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """``(len(passages),)`` float32 logits of ``query`` against each passage."""
        scores = []
        for first in range(0, len(passages), BATCH_PAIRS):
            feeds = self.feeds(query, passages[first : first + BATCH_PAIRS])
            scores.append(self.session.run(None, feeds)[0].reshape(-1))
        return np.concatenate(scores).astype(np.float32) if scores else np.zeros(0, np.float32)
