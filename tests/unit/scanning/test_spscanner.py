"""The paper's token-level scanner: conversion, loading, token positions, windows, CLI."""

from __future__ import annotations

import hashlib
import json
import pickle
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from longscan.cli import app
from longscan.documents import Document
from longscan.retrievers.registry import get_retriever, parse_name
from longscan.scanning.checkpoint import CheckpointError
from longscan.scanning.spscanner import (
    SPScanner,
    convert_checkpoint,
    first_tokens,
    load_spscanner,
    read_source_weights,
    sliding_windows,
    tokenize_collection,
)

NOVEL = (resources.files("longscan") / "data" / "sample_novel.txt").read_text(encoding="utf-8")


def test_conversion_keeps_every_weight_and_records_the_source_hash(
    published_spscanner: Path, converted_spscanner: Path
) -> None:
    source = torch.load(published_spscanner / "pytorch_model.bin", weights_only=True)
    model, _, info = load_spscanner(converted_spscanner)
    assert torch.equal(model.embedding.weight, source["backbone.embedding.weight"])
    assert torch.equal(
        model.layers[1].mixer.conv_weight, source["backbone.layers.1.mixer.conv1d.weight"][:, 0]
    )
    assert torch.equal(model.binary_head.bias, source["binary_head.bias"])
    digest = hashlib.sha256((published_spscanner / "pytorch_model.bin").read_bytes()).hexdigest()
    assert info.source == {"file": "pytorch_model.bin", "sha256": digest}
    assert not list(converted_spscanner.glob("*.bin"))  # later loads read safetensors only


def test_a_wrong_published_hash_is_refused(published_spscanner: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="is not the expected"):
        convert_checkpoint(published_spscanner, tmp_path / "out", expect_sha256="0" * 64)
    assert not (tmp_path / "out").exists()


def published_config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


class _Planted:
    """Unpickling this runs ``Path.touch`` on a file: code in a pickle."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.target,))


def test_a_pickle_with_code_in_it_is_refused_and_not_run(tmp_path: Path) -> None:
    target = tmp_path / "ran"
    weights = tmp_path / "pytorch_model.bin"
    with weights.open("wb") as handle:
        pickle.dump({"backbone.embedding.weight": _Planted(target)}, handle)
    with pytest.raises(CheckpointError, match="refused"):
        read_source_weights(weights)
    assert not target.exists()


def test_weights_of_another_layout_are_refused_with_every_name(
    published_spscanner: Path, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "tokenizer.json").write_bytes((published_spscanner / "tokenizer.json").read_bytes())
    (source / "config.json").write_text(
        json.dumps({**published_config(published_spscanner), "n_layer": 3})
    )
    (source / "pytorch_model.bin").write_bytes(
        (published_spscanner / "pytorch_model.bin").read_bytes()
    )
    with pytest.raises(CheckpointError) as error:
        convert_checkpoint(source, tmp_path / "out")
    assert "missing: backbone.layers.2.mixer.A_log" in str(error.value)


def test_corrupt_converted_files_are_refused(converted_spscanner: Path, tmp_path: Path) -> None:
    for name in ("model.safetensors", "tokenizer.json"):
        copy = tmp_path / name.split(".")[0]
        copy.mkdir()
        for file in converted_spscanner.iterdir():
            data = file.read_bytes()
            (copy / file.name).write_bytes(data[:-7] + b"garbage" if file.name == name else data)
        with pytest.raises(CheckpointError, match="SHA-256 does not match"):
            load_spscanner(copy)


def test_sentence_ends_fall_on_each_sentences_last_token(converted_spscanner: Path) -> None:
    _, tokenizer, _ = load_spscanner(converted_spscanner)
    document = Document("novel", NOVEL[:20_000])
    collection = tokenize_collection(tokenizer, [document])
    offsets = tokenizer.encode(document.text, add_special_tokens=False).offsets
    for (start, end), last in zip(document.sentences.tolist(), collection.ends, strict=True):
        token_start, token_end = offsets[last]
        assert token_start < end  # the token starts inside the sentence (or before it) ...
        after = offsets[last + 1][0] if last + 1 < len(offsets) else len(document.text)
        assert after >= end or after <= start  # ... and the next one does not


def test_sliding_windows_cover_every_sentence_in_order() -> None:
    ends = np.cumsum(np.random.default_rng(0).integers(3, 40, size=200)) - 1
    windows = sliding_windows(ends, window=300, stride=150)
    firsts = first_tokens(ends)
    covered = np.zeros(len(ends), int)
    for first, last in windows:
        assert ends[last] - firsts[first] + 1 <= 300 or first == last
        covered[first : last + 1] += 1
    assert covered.min() >= 1 and windows[-1][1] == len(ends) - 1
    assert all(b[0] > a[0] for a, b in zip(windows, windows[1:], strict=False))
    assert covered.max() <= 3  # half-window strides overlap about twice


def test_spscanner_ranks_real_text_with_exact_offsets_stream_and_sliding(
    converted_spscanner: Path, data_dir: Path
) -> None:
    from longscan.bench.builders import build_squad_long

    (item,) = build_squad_long("train", 1500, max_items=1, seed=0, data_dir=data_dir)
    (document,) = item.documents
    retriever = get_retriever(f"spscanner:{converted_spscanner}")
    evidence = retriever.retrieve(item.query, [document])
    assert len(evidence) == len(document.sentences)
    for hit in evidence:
        assert hit.text == document.text[hit.start : hit.end]

    stream = SPScanner.from_pretrained(converted_spscanner, mode="stream", device="cpu")
    one_window = SPScanner.from_pretrained(converted_spscanner, mode="sliding", device="cpu")
    scores = stream.score(item.query, [document])
    assert np.allclose(one_window.score(item.query, [document]), scores, atol=1e-4)

    windows = SPScanner.from_pretrained(
        converted_spscanner, mode="sliding", window_tokens=400, device="cpu"
    ).score(item.query, [document])
    assert windows.shape == scores.shape
    assert not np.allclose(windows, scores)  # later sentences lose their far context


def test_the_names_parse_like_scanner_checkpoints(converted_spscanner: Path) -> None:
    assert parse_name(f"spscanner-sliding:{converted_spscanner}") == (
        "spscanner-sliding",
        converted_spscanner,
    )
    with pytest.raises(ValueError, match="needs a checkpoint folder"):
        parse_name("spscanner")
    with pytest.raises(CheckpointError, match="spscanner-convert"):
        get_retriever(f"spscanner:{resources.files('longscan') / 'checkpoints'}")


def test_cli_converts_and_asks(published_spscanner: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "converted"
    result = runner.invoke(app, ["spscanner-convert", str(published_spscanner), str(out)])
    assert result.exit_code == 0, result.output
    novel = tmp_path / "novel.txt"
    novel.write_text(NOVEL[:30_000], encoding="utf-8")
    result = runner.invoke(
        app,
        ["ask", str(novel), "-q", "Who is late?", "-r", f"spscanner:{out}", "--json", "-k", "3"]
        + ["--no-abstain"],
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["evidence"]
    assert len(hits) == 3
    for hit in hits:
        assert hit["text"] == NOVEL[hit["start"] : hit["end"]]
