"""Chunking-free in-context retrieval on the packaged Gemma 3 270M, in process."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE, WEIGHTS_FILE, AdapterError
from longscan.incontext.cfic import CFIC, PACKAGED_ADAPTER, SentenceTrie, Span, merge_spans
from longscan.incontext.lm import DEFAULT_MODEL, RECORD, WEIGHTS, intact, load_causal_lm
from longscan.retrievers.registry import get_retriever, parse_name


def test_trie_keeps_only_prefixes_and_tells_sentences_apart() -> None:
    trie = SentenceTrie(depth=8)
    trie.add([5, 6, 7], 0)
    trie.add([5, 6, 9, 1], 1)
    trie.add([4], 2)
    assert set(trie.root.children) == {4, 5}
    shared = trie.root.children[5].children[6]
    assert shared.sentences == {0, 1} and set(shared.children) == {7, 9}
    assert shared.children[9].sentences == {1}


def test_overlapping_spans_merge_and_keep_the_best_score() -> None:
    spans = [
        Span(0, 10, 50, -2.0),
        Span(0, 40, 90, -1.0),
        Span(1, 0, 5, -3.0),
        Span(0, 95, 99, -0.5),
    ]
    assert merge_spans(spans) == [Span(0, 95, 99, -0.5), Span(0, 10, 90, -1.0), Span(1, 0, 5, -3.0)]


@pytest.fixture(scope="module")
def cfic() -> CFIC:
    return CFIC(load_causal_lm())


def _squad(data_dir: Path, words: int, count: int) -> list:
    from longscan.bench.builders import build_squad_long

    return build_squad_long("dev", words, max_items=count, seed=0, data_dir=data_dir)


def test_cfic_quotes_whole_sentences_with_exact_offsets_and_reuses_its_cache(
    cfic: CFIC, data_dir: Path
) -> None:
    first, second = _squad(data_dir, 400, 2)
    (document,) = first.documents
    assert second.documents[0].text == document.text  # one article, two questions
    spans = cfic.spans(first.query, [document])
    assert 1 <= len(spans) <= cfic.branches
    starts, ends = set(document.sentences[:, 0].tolist()), set(document.sentences[:, 1].tolist())
    for span in spans:
        assert span.start in starts and span.end in ends  # whole sentences, never generated
    caches = [window.cache for window in cfic.windows(document)]
    cfic.spans(second.query, [document])
    assert [window.cache for window in cfic.windows(document)] == caches  # read once


def test_cfic_reads_a_long_text_in_windows_and_finds_the_answer(cfic: CFIC, data_dir: Path) -> None:
    narrow = CFIC(load_causal_lm(), window_tokens=250)
    item = next(i for i in _squad(data_dir, 400, 6) if "network" in i.query)
    (document,) = item.documents
    assert len(narrow.windows(document)) >= 2
    spans = narrow.spans(item.query, [document])
    quoted = " ".join(document.text[s.start : s.end] for s in spans)
    assert any(answer in quoted for answer in item.answers)


def test_cfic_is_a_retriever_by_name() -> None:
    assert parse_name("cfic") == ("cfic", None)
    retriever = get_retriever("cfic")
    documents = [
        Document("cats.txt", "Cats purr when content. They sleep a lot."),
        Document("ships.txt", "The ship sailed at dawn. Its hull was made of oak."),
    ]
    evidence = retriever.retrieve("What was the hull made of?", documents, top_k=2)
    assert evidence and len(evidence) <= 2
    for hit in evidence:
        source = next(d for d in documents if d.id == hit.doc_id)
        assert hit.text == source.text[hit.start : hit.end]
    assert "oak" in evidence[0].text
    read = {key: id(windows) for key, windows in retriever.cfic._windows.items()}
    assert len(read) == 2  # both texts stay read for the next question
    retriever.retrieve("When did the ship sail?", documents)
    assert {key: id(w) for key, w in retriever.cfic._windows.items()} == read


def test_cfic_reads_with_the_packaged_fine_tuning_merged_into_its_own_copy() -> None:
    import torch
    from safetensors.torch import load_file

    tuned = get_retriever("cfic").cfic.lm.model
    plain = get_retriever(f"cfic:{DEFAULT_MODEL}").cfic.lm.model
    assert tuned is not plain and plain is load_causal_lm().model  # the plain one stays plain
    config = json.loads((PACKAGED_ADAPTER / CONFIG_FILE).read_text())
    assert config["base_model"] == DEFAULT_MODEL
    tensors = load_file(PACKAGED_ADAPTER / WEIGHTS_FILE)
    scaling = config["adapter"]["alpha"] / config["adapter"]["rank"]
    layers = {name for name in tensors if name.endswith(".lora_A")}
    assert len(layers) == 4 * plain.config.num_hidden_layers  # q, k, v, o of every layer
    for layer in sorted(layers)[:3]:
        name = layer.removesuffix(".lora_A")
        update = tensors[f"{name}.lora_B"] @ tensors[layer] * scaling
        assert update.abs().max() > 0  # trained, not the zero initialisation
        merged = tuned.get_submodule(name).weight - plain.get_submodule(name).weight
        torch.testing.assert_close(merged, update, atol=1e-6, rtol=1e-4)


def test_a_corrupt_or_foreign_cfic_adapter_is_refused_before_the_model_loads(
    tmp_path: Path,
) -> None:
    from longscan.rerankers.cross_encoder import PACKAGED as RERANKER

    copy = tmp_path / "adapter"
    shutil.copytree(PACKAGED_ADAPTER, copy)
    weights = copy / WEIGHTS_FILE
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(AdapterError, match=f"{WEIGHTS_FILE}.*SHA-256.*corrupt"):
        load_causal_lm(adapter=str(copy))
    with pytest.raises(AdapterError, match="adapter for 'all-MiniLM-L6-v2', not 'gemma-3-270m'"):
        load_causal_lm(adapter=str(RERANKER))
    with pytest.raises(AdapterError, match="missing.*cfic-sft --save"):
        load_causal_lm(adapter=str(tmp_path / "nothing"))


def test_a_damaged_dequantised_model_is_not_trusted(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / WEIGHTS).write_bytes(b"weights" * 1000)
    assert not intact(tmp_path)  # no record: never complete
    digest = hashlib.sha256((tmp_path / WEIGHTS).read_bytes()).hexdigest()
    (tmp_path / RECORD).write_text(json.dumps({"sha256": digest}))
    assert intact(tmp_path)
    (tmp_path / WEIGHTS).write_bytes(b"weights" * 999)  # truncated
    assert not intact(tmp_path)


def _dequantised(folder: Path, weights: bytes) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / WEIGHTS).write_bytes(weights)
    digest = hashlib.sha256(weights).hexdigest()
    (folder / RECORD).write_text(json.dumps({"sha256": digest}))
    return folder


def test_a_model_another_process_dequantised_first_is_kept(tmp_path: Path) -> None:
    """Two processes may dequantise the same GGUF at once: the second to finish keeps the
    first one's intact folder (renaming onto a full folder fails), or replaces a damaged one."""
    from longscan.incontext.lm import move_into_place

    folder = _dequantised(tmp_path / "model", b"first" * 100)
    mine = _dequantised(tmp_path / ".model.partial", b"second" * 100)
    assert move_into_place(mine, folder) == folder
    assert (folder / WEIGHTS).read_bytes() == b"first" * 100 and not mine.exists()
    (folder / WEIGHTS).write_bytes(b"cut")  # damaged
    mine = _dequantised(tmp_path / ".model.partial", b"second" * 100)
    move_into_place(mine, folder)
    assert (folder / WEIGHTS).read_bytes() == b"second" * 100 and intact(folder)
    fresh = _dequantised(tmp_path / ".other.partial", b"third" * 100)
    assert move_into_place(fresh, tmp_path / "other") == tmp_path / "other"
    assert intact(tmp_path / "other") and not fresh.exists()


_CLAUSES = ["The cat sat on the mat", "The cat sat on the hat", "A ship left at dawn",
            "A ship left at dusk", "Rain fell", "Oak is hard"]  # fmt: skip


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(st.integers(0, len(_CLAUSES) - 1), min_size=2, max_size=9),
    question=st.sampled_from(["Where did the cat sit?", "When did the ship leave?", "What fell?"]),
)
def test_constrained_decoding_quotes_only_whole_sentences_of_the_text(
    cfic: CFIC, picks: list[int], question: str
) -> None:
    # repeated sentences and sentences sharing long prefixes are the hard cases for the trie
    text = " ".join(f"{_CLAUSES[i]}." for i in picks)
    document = Document("random.txt", text)
    starts, ends = set(document.sentences[:, 0].tolist()), set(document.sentences[:, 1].tolist())
    spans = cfic.spans(question, [document])
    assert spans
    for span in spans:
        assert span.start in starts and span.end in ends and span.start < span.end
        assert text[span.start : span.end].endswith(".")  # skip decoding stops at an end
