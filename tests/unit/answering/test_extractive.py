"""The extractive reader: it finds real answers as exact spans of the evidence it is given,
declines what it cannot read, refuses a damaged adapter, and ONNX Runtime computes the
PyTorch model's logits."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from longscan.answering.extractive import (
    EVIDENCE_SEPARATOR,
    PACKAGED,
    ExtractiveReader,
    join_evidence,
    load_reader_model,
    onnx_reader,
)
from longscan.bench.builders import build_squad_long
from longscan.documents import Document, Evidence
from longscan.encoders.adapter import WEIGHTS_FILE, AdapterError
from longscan.encoders.bert import onnx_session
from longscan.evaluation.answers import token_f1
from longscan.evaluation.gold import gold_unit_labels
from longscan.items import QAItem

QUESTIONS = 8


@pytest.fixture(scope="module")
def squad_items(data_dir: Path) -> list[QAItem]:
    """Real SQuAD development questions over documents of whole articles."""
    return build_squad_long("dev", 5_000, max_items=QUESTIONS, seed=0, data_dir=data_dir)


def gold_evidence(item: QAItem) -> list[Evidence]:
    """The answer's sentence with its neighbours, as evidence of the item's document."""
    document = item.documents[0]
    labels = gold_unit_labels(item)[document.id]
    chosen = {j for i in np.flatnonzero(labels) for j in (i - 1, i, i + 1)}
    spans = document.sentences
    return [
        Evidence.of(document, int(spans[i, 0]), int(spans[i, 1]), 1.0, i)
        for i in sorted(chosen)
        if 0 <= i < len(spans)
    ]


def test_real_answers_are_found_as_exact_spans_of_the_cited_evidence(
    squad_items: list[QAItem],
) -> None:
    """Read without a threshold, so every question gets its best span."""
    reader = ExtractiveReader(threshold=-np.inf)
    overlaps = []
    for item in squad_items:
        evidence = gold_evidence(item)
        span = reader.read(item.query, evidence)
        assert span is not None, item.query
        document = item.documents[0]
        cited = evidence[span.evidence]
        assert span.doc_id == document.id == cited.doc_id
        assert document.text[span.start : span.end] == span.text
        assert cited.start <= span.start < span.end <= cited.end
        overlaps.append(token_f1(span.text, item.answers))
    assert np.mean(overlaps) > 0.4, overlaps  # an untrained head scores about 0.08


def test_a_span_keeps_its_offsets_whatever_precedes_it_in_the_evidence(
    squad_items: list[QAItem],
) -> None:
    """Evidence is read in the order given: a span found after other items (and their
    separators) still points into its own document."""
    reader = ExtractiveReader(threshold=-np.inf)
    item = squad_items[0]
    evidence = gold_evidence(item)
    other = Document("other", "Zürich’s café opened in 1990 — ☕ is served all day.")
    padded = [Evidence.of(other, 0, len(other.text), 1.0, 0), *evidence]
    alone, after = reader.read(item.query, evidence), reader.read(item.query, padded)
    assert alone is not None and after is not None
    assert (after.start, after.end, after.text) == (alone.start, alone.end, alone.text)
    assert after.evidence == alone.evidence + 1


def test_evidence_is_joined_with_the_separator_and_each_start_is_known() -> None:
    context, starts = join_evidence(["Ab.", "Cde.", "F"])
    assert context == f"Ab.{EVIDENCE_SEPARATOR}Cde.{EVIDENCE_SEPARATOR}F"
    assert [context[s : s + n] for s, n in zip(starts, (3, 4, 1), strict=True)] == [
        "Ab.",
        "Cde.",
        "F",
    ]


def test_no_evidence_gives_no_answer_and_an_empty_question_is_refused(
    squad_items: list[QAItem],
) -> None:
    reader = ExtractiveReader()
    assert reader.read("Who wrote it?", []) is None
    for question in ("", "  \n\t"):
        with pytest.raises(ValueError, match="question is empty"):
            reader.read(question, gold_evidence(squad_items[0]))


def test_a_huge_question_is_read_from_its_end(squad_items: list[QAItem]) -> None:
    reader = ExtractiveReader()
    item = squad_items[0]
    question = "Read the evidence and answer from it alone. " * 23_000 + item.query
    assert len(question) > 1_000_000
    assert reader.tokenizer.fit_question(question).endswith(item.query)
    span = reader.read(question, gold_evidence(item))
    assert span is None or item.documents[0].text[span.start : span.end] == span.text


def test_a_corrupt_adapter_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "reader"
    shutil.copytree(PACKAGED, copy)
    weights = copy / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(AdapterError, match="SHA-256.*corrupt"):
        ExtractiveReader(copy)


def test_onnx_logits_match_the_pytorch_model(squad_items: list[QAItem]) -> None:
    """Several windows of different lengths, padded together, as ``read`` runs them."""
    import torch

    reader = ExtractiveReader()
    item = squad_items[1]
    context = item.documents[0].text[:4_000]  # far past one window
    windows = reader.tokenizer.windows(item.query, context)
    assert len(windows.input_ids) > 2 and not windows.attention_mask.all()
    feeds = {name: torch.from_numpy(value) for name, value in windows.feeds().items()}
    with torch.inference_mode():
        outputs = load_reader_model()(**feeds)
    expected = torch.stack([outputs.start_logits, outputs.end_logits], dim=-1).numpy()
    real = windows.attention_mask.astype(bool)
    float32 = onnx_session(onnx_reader(storage=None), 1).run(None, windows.feeds())[0]
    np.testing.assert_allclose(float32[real], expected[real], atol=1e-4)
    # the shipped graph, its weights stored in 8 bits: close, and the same best start and
    # end in every window (measured: 0.05 apart on average, at most 0.4)
    shipped = reader.logits(windows)
    assert np.abs(shipped[real] - expected[real]).mean() < 0.1
    masked = np.where(real[..., None], shipped, -1e4), np.where(real[..., None], expected, -1e4)
    np.testing.assert_array_equal(masked[0].argmax(axis=1), masked[1].argmax(axis=1))
