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
from longscan.encoders.bert import onnx_session
from longscan.files import file_sha256
from longscan.rerankers.cross_encoder import PACKAGED, CrossEncoderReranker
from longscan.rerankers.onnx import OnnxCrossEncoder, onnx_cross_encoder


def test_onnx_scores_match_pytorch_in_float32(novel: Document) -> None:
    """The float32 export gives PyTorch's scores; the shipped graph, its weights stored in
    fewer bits, stays within a few hundredths of them (measured: 0.005 on average, at most
    0.033) and ranks the passages as PyTorch does at the top."""
    shipped, torch_model = OnnxCrossEncoder(), CrossEncoderReranker.load(bfloat16=False)
    float32 = OnnxCrossEncoder()
    float32.session = onnx_session(onnx_cross_encoder(storage=None), 1)
    passages = [shipped.passage(novel, i) for i in range(0, 600, 23)]
    passages.append(novel.text[:6_000])  # far past 128 word pieces: truncated the same way
    for query in ("Who fell down the rabbit hole?", "What did the Cat say? " * 40):
        expected = torch_model.score(query, passages)
        np.testing.assert_allclose(float32.score(query, passages), expected, atol=1e-4)
        change = np.abs(shipped.score(query, passages) - expected)
        assert change.mean() < 0.02 and change.max() < 0.1
        assert np.argmax(shipped.score(query, passages)) == np.argmax(expected)


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
