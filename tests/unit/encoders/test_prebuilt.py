"""Graphs the package carries prebuilt are used instead of exports from the weights (no
torch at query time), and only when they match their manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import longscan.encoders.bert as bert
import longscan.files as files
from longscan.encoders.bert import OnnxBert, WordPieces, onnx_export
from longscan.files import MANIFEST, file_sha256, portable_name, prebuilt_export


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The int8 encoder, exported from the weights into a cache of its own."""
    return onnx_export(quantized=True, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture
def packaged(exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package exports folder holding that graph under its portable name."""
    folder = tmp_path / "exports"
    folder.mkdir()
    target = folder / portable_name(exported.name)
    shutil.copyfile(exported, target)
    (folder / MANIFEST).write_text(json.dumps({target.name: file_sha256(target)}))
    monkeypatch.setattr(files, "exports_folder", lambda: folder)
    return target


def test_the_portable_name_drops_the_runtime_version() -> None:
    name = "scanner-750c1c4f97d61ab2-g2-ort1.32.0-m0-stack64.onnx"
    assert portable_name(name) == "scanner-750c1c4f97d61ab2-g2-m0-stack64.onnx"
    assert portable_name("minilm-0.1.0-base-fp32-ort1.18.1.onnx") == "minilm-0.1.0-base-fp32.onnx"


def test_a_packaged_graph_is_copied_in_and_nothing_is_exported(
    packaged: Path, exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_export(*_: object) -> None:
        raise AssertionError("exported from the weights despite a packaged graph")

    monkeypatch.setattr(bert, "_export", no_export)
    path = onnx_export(quantized=True, cache_dir=tmp_path / "fresh")
    assert path.read_bytes() == packaged.read_bytes()
    words = WordPieces()
    ids, mask = words.batch(["The key is under the stone."], 16)
    np.testing.assert_array_equal(
        OnnxBert(path).hidden_states(ids, mask), OnnxBert(exported).hidden_states(ids, mask)
    )


def test_a_packaged_graph_unlike_its_manifest_is_never_used(packaged: Path) -> None:
    assert prebuilt_export(packaged.name) == packaged
    raw = bytearray(packaged.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    packaged.write_bytes(bytes(raw))
    assert prebuilt_export(packaged.name) is None


def test_no_manifest_means_no_packaged_graph(packaged: Path) -> None:
    assert prebuilt_export(packaged.name) == packaged
    (packaged.parent / MANIFEST).unlink()
    assert prebuilt_export(packaged.name) is None
