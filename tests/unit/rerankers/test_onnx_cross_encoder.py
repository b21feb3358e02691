"""The re-scorer through ONNX Runtime gives the PyTorch model's scores, truncation included,
and reads a long prompt to its question as PyTorch does; its export is keyed by the
adapter: another adapter gets another file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE, WEIGHTS_FILE, AdapterError
from longscan.files import file_sha256
from longscan.rerankers.cross_encoder import PACKAGED, CrossEncoderReranker
from longscan.rerankers.onnx import OnnxCrossEncoder, onnx_cross_encoder


def test_onnx_scores_match_pytorch_in_float32(novel: Document) -> None:
    onnx, torch_model = OnnxCrossEncoder(), CrossEncoderReranker.load(bfloat16=False)
    passages = [onnx.passage(novel, i) for i in range(0, 600, 23)]
    passages.append(novel.text[:6_000])  # far past 128 word pieces: truncated the same way
    for query in ("Who fell down the rabbit hole?", "What did the Cat say? " * 40):
        np.testing.assert_allclose(
            onnx.score(query, passages), torch_model.score(query, passages), atol=1e-4
        )


def test_the_export_is_named_by_the_adapters_checked_weights(tmp_path: Path) -> None:
    changed = tmp_path / "reranker"
    shutil.copytree(PACKAGED, changed)
    weights = changed / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the last tensor
    weights.write_bytes(bytes(data))
    with pytest.raises(AdapterError, match="SHA-256"):
        onnx_cross_encoder(changed)
    config = json.loads((changed / CONFIG_FILE).read_text())
    config["sha256"] = file_sha256(weights)  # another adapter, properly recorded
    (changed / CONFIG_FILE).write_text(json.dumps(config))
    assert onnx_cross_encoder(changed).name != onnx_cross_encoder(PACKAGED).name


def test_a_long_prompt_is_read_to_its_question_the_same_by_both_readers() -> None:
    """Both readers read a long prompt from the same piece on (``fit_query``), and a query
    that fits as given."""
    onnx, torch_model = OnnxCrossEncoder(), CrossEncoderReranker.load(bfloat16=False)
    question = "Who fell down the rabbit hole?"
    prompt = "Read the story above and answer from it alone. " * 12 + question
    assert onnx.fit_query(prompt) == torch_model.fit_query(prompt) != prompt
    assert onnx.fit_query(question) == question
