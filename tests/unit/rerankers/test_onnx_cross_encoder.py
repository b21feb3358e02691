"""The re-scorer through ONNX Runtime gives the PyTorch model's scores, truncation included,
and reads a long prompt to its question as PyTorch does; its export is keyed by the
adapter: another adapter gets another file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from longscan.bench.builders import build_squad_long
from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE, WEIGHTS_FILE, AdapterError
from longscan.encoders.cache import file_sha256
from longscan.evaluation.gold import gold_unit_labels
from longscan.rerankers.cross_encoder import PACKAGED, QUERY_PIECES, CrossEncoderReranker
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


# an instruction of about 120 word pieces, as long prompts (Loong's, L-Eval's) put before
# their question
INSTRUCTION = 2 * (
    "Please read the long document given above carefully, paying attention to every "
    "section, table and footnote, and then answer the question that follows using only the "
    "information that you found in the document. If the document does not contain the "
    "information needed, say that it cannot be answered. Keep your answer short and precise."
    "\n\n"
)


def test_a_long_prompt_is_read_to_its_question_the_same_by_both_readers() -> None:
    """A pair is cut longest first, so a long prompt lost its question: both readers now
    read its last ``QUERY_PIECES`` pieces, which end with the question, and read a short
    query as given."""
    onnx, torch_model = OnnxCrossEncoder(), CrossEncoderReranker.load(bfloat16=False)
    question = "Who fell down the rabbit hole?"
    read = torch_model.fit_query(INSTRUCTION + question)
    assert read == onnx.fit_query(INSTRUCTION + question)
    assert read.endswith(question) and (INSTRUCTION + question).endswith(read)
    pieces = torch_model.model.tokenizer(read, add_special_tokens=False)["input_ids"]
    assert len(pieces) == QUERY_PIECES
    assert torch_model.fit_query(question) == onnx.fit_query(question) == question


def test_the_re_scorer_still_finds_gold_sentences_after_a_long_instruction(
    data_dir: Path,
) -> None:
    """Development SQuAD questions after the instruction: read to its question, the gold
    sentence in context outscores both neighbours for most of them, as for the questions
    alone (8 of 12; with the instruction cut longest first, 5)."""
    reranker = CrossEncoderReranker.load(bfloat16=False)
    items = build_squad_long("dev", 5_000, max_items=12, seed=0, data_dir=data_dir)
    wins = 0
    for item in items:
        (document,) = item.documents
        gold = int(np.flatnonzero(gold_unit_labels(item)[document.id])[0])
        near = [i for i in (gold - 1, gold + 1) if 0 <= i < len(document.sentences)]
        passages = [reranker.passage(document, i) for i in (gold, *near)]
        scores = reranker.score(reranker.fit_query(INSTRUCTION + item.query), passages)
        wins += bool(scores[0] > scores[1:].max())
    assert wins > len(items) / 2, f"gold beat both neighbours on {wins} of {len(items)} questions"
