"""MiniLM's runtimes: the word pieces match transformers' tokenizer, ONNX Runtime in float32
gives the PyTorch reference's vectors, int8 ranks sentences as the reference does on real
questions, and a damaged export in the cache is made again rather than run."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from longscan.encoders.bert import (
    RUNTIME_VARIABLE,
    EncoderRuntimeError,
    OnnxBert,
    TorchBert,
    WordPieces,
    chosen_runtime,
    onnx_export,
    packaged_model_dir,
)
from longscan.encoders.cache import recorded_sha256
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.encoders.minilm import DEFAULT_ENCODER, SentenceEncoder, get_encoder

ODD_TEXTS = ["", "   ", "naïve café Ünïcödé", "東京は日本の首都です。", "🙂 emoji 🙂", "x" * 3000]


@pytest.fixture(scope="module")
def words() -> WordPieces:
    return WordPieces()


@pytest.fixture(scope="module")
def reference(words: WordPieces) -> SentenceEncoder:
    return SentenceEncoder(TorchBert.packaged(), words, DEFAULT_ENCODER)


@pytest.fixture(scope="module")
def sentences(novel) -> list[str]:
    return novel.sentence_texts()[:300] + ODD_TEXTS


def test_word_pieces_are_transformers_ids(words: WordPieces, sentences: list[str]) -> None:
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(str(packaged_model_dir()))
    expected = theirs(sentences, add_special_tokens=False, truncation=True, max_length=254)
    assert words.pieces(sentences, 254) == expected["input_ids"]
    ids, mask = words.batch(sentences[:40], 256)
    padded = theirs(sentences[:40], padding=True, truncation=True, max_length=256)
    np.testing.assert_array_equal(ids, padded["input_ids"])
    np.testing.assert_array_equal(mask, padded["attention_mask"])


def test_the_reference_is_sentence_transformers_own_encoding(
    reference: SentenceEncoder, sentences: list[str]
) -> None:
    from longscan.encoders.minilm import packaged_model

    theirs = packaged_model().encode(sentences, convert_to_numpy=True, normalize_embeddings=True)
    cosine = (reference.encode(sentences, batch_size=32) * theirs).sum(axis=1)
    assert cosine.min() > 0.99999


def test_onnx_float32_gives_the_reference_vectors(
    reference: SentenceEncoder, words: WordPieces, sentences: list[str], novel
) -> None:
    """Its weights stored in fewer bits (``ENCODER_STORAGE``), the float32 graph stays next
    to PyTorch's exact weights: measured cosine at least 0.99992 (mean 0.99998), token
    states within 0.0026, vectors in context at least 0.99995."""
    fast = SentenceEncoder(OnnxBert(onnx_export(quantized=False)), words, DEFAULT_ENCODER)
    cosine = (fast.encode(sentences) * reference.encode(sentences)).sum(axis=1)
    assert cosine.min() > 0.9998
    assert cosine.mean() > 0.99995
    tokens = [e.token_vectors(sentences[:20], 48) for e in (fast, reference)]
    for ours, theirs in zip(*tokens, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=5e-3)
    from longscan.documents import Document

    opening = Document("opening", novel.text[:30_000])  # a fifth of the novel
    in_context = ContextualSentenceEncoder(fast).encode_document(opening)
    expected = ContextualSentenceEncoder(reference).encode_document(opening)
    assert (in_context * expected).sum(axis=1).min() > 0.9998


def test_one_pass_gives_a_questions_vector_and_its_token_states(sentences: list[str]) -> None:
    """A re-query encodes its question once: the pooled vector and the token states match
    ``encode`` and ``token_vectors``, also for a question longer than the token cut."""
    encoder = get_encoder()
    for text in ["Who painted the roses red?", sentences[5], " ".join(sentences[:40])]:
        vector, tokens = encoder.vector_and_tokens(text, 48)
        np.testing.assert_allclose(vector, encoder.encode([text])[0], atol=1e-5)
        np.testing.assert_allclose(tokens, encoder.token_vectors([text], 48)[0], atol=1e-5)
        assert len(tokens) <= 46


def test_int8_ranks_sentences_as_the_reference_does(data_dir: Path) -> None:
    """On real SQuAD questions over ~3,000-word documents, the int8 export's top ten
    sentences (in context, by cosine with the question) are the reference's: 9.58 of 10 on
    average when measured, never fewer than 9 on average or 8 for one question."""
    from longscan.bench.builders import build_squad_long

    items = build_squad_long("dev", 3000, max_items=12, seed=0, data_dir=data_dir)
    full, small = get_encoder(), get_encoder(DEFAULT_ENCODER + "+int8")
    assert small.name == "all-MiniLM-L6-v2+int8" and full.name == DEFAULT_ENCODER
    overlaps = []
    for item in items:
        tops = []
        for encoder in (full, small):
            vectors = ContextualSentenceEncoder(encoder).encode_document(item.documents[0])
            scores = vectors @ encoder.encode([item.query])[0]
            tops.append(set(np.argsort(-scores)[:10].tolist()))
        overlaps.append(len(tops[0] & tops[1]))
    assert np.mean(overlaps) >= 9 and min(overlaps) >= 8, overlaps


def test_int8_weights_fit_seven_bits_so_no_cpu_kernel_saturates() -> None:
    """ONNX Runtime's uint8 x int8 kernel on a CPU without VNNI sums a pair of products in
    16 bits and saturates past 32,767; 7-bit weights keep every pair at or below
    255 * 64 * 2 = 32,640, so every x86-64 CPU computes the same vectors."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_export(quantized=True)))
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    multiplied = [
        weights[node.input[1]]
        for node in model.graph.node
        if node.op_type == "MatMulInteger" and node.input[1] in weights
    ]
    assert len(multiplied) >= 36  # six layers' four attention and two feed-forward products
    for array in multiplied:
        assert array.dtype == np.int8
        assert int(np.abs(array.astype(np.int16)).max()) <= 64


def test_int8_vectors_do_not_depend_on_what_was_encoded_before(filing_path: Path) -> None:
    """The int8 export quantises activations per tensor, so a batch's other rows and padding
    moved a sentence's vector; read row by row, a sentence gets one vector alone or in any
    batch, and a filing the same vectors whether part of it was encoded before or not."""
    from longscan.documents import Document
    from longscan.readers.files import read_file

    small = get_encoder(DEFAULT_ENCODER + "+int8")
    filing = read_file(filing_path)
    texts = filing.sentence_texts()[:40]
    alone = np.stack([small.encode([text])[0] for text in texts[:8]])
    np.testing.assert_array_equal(small.encode(texts)[:8], alone)
    np.testing.assert_array_equal(small.encode(texts[:8][::-1])[::-1], alone)

    fresh = ContextualSentenceEncoder(small, table_context=True).encode_document(filing)
    warm = ContextualSentenceEncoder(small, paragraph_cache_size=10_000, table_context=True)
    warm.encode_document(Document("first half", filing.text[: len(filing.text) // 2]))
    np.testing.assert_array_equal(warm.encode_document(filing), fresh)


def test_a_damaged_export_is_made_again_not_run(tmp_path: Path, caplog) -> None:
    path = onnx_export(quantized=True, cache_dir=tmp_path)
    words = WordPieces()
    ids, mask = words.batch(["The key is under the stone."], 16)
    before = OnnxBert(path).hidden_states(ids, mask)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte inside the weights still parses
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="longscan.encoders.cache"):
        again = onnx_export(quantized=True, cache_dir=tmp_path)
    assert again == path and "damaged" in caplog.text
    np.testing.assert_allclose(OnnxBert(again).hidden_states(ids, mask), before, atol=1e-6)
    optimized = f"{path.stem}.{recorded_sha256(path)[:16]}.optimized"  # what sessions load
    expected = [path.name, path.stem + ".json", optimized + ".onnx", optimized + ".json"]
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(expected)  # nothing staged


def test_the_runtime_is_chosen_by_the_variable_else_by_the_device(monkeypatch) -> None:
    monkeypatch.delenv(RUNTIME_VARIABLE, raising=False)
    monkeypatch.setenv("LONGSCAN_DEVICE", "cpu")
    assert chosen_runtime() == "onnx"
    monkeypatch.setenv(RUNTIME_VARIABLE, " Torch ")
    assert chosen_runtime() == "torch"
    monkeypatch.setenv(RUNTIME_VARIABLE, "tensorrt")
    with pytest.raises(EncoderRuntimeError, match="LONGSCAN_RUNTIME='tensorrt'"):
        chosen_runtime()


def test_an_unknown_encoder_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown encoder 'bert-large'.*\+int8"):
        get_encoder("bert-large")


def test_one_encoder_per_process_however_it_is_named(monkeypatch) -> None:
    """The scanner names its encoder, the bank does not: both must share one ONNX session
    (a second would cost memory and, on a fresh cache, an export inside a request)."""
    monkeypatch.setenv("LONGSCAN_RUNTIME", "onnx")
    shared = get_encoder()
    assert get_encoder(DEFAULT_ENCODER) is shared
    assert get_encoder(name=DEFAULT_ENCODER, adapter=None) is shared
    monkeypatch.setenv("LONGSCAN_RUNTIME", "torch")
    assert get_encoder() is not shared  # another runtime, another body
