"""The scan network through ONNX Runtime scores as the PyTorch network does: the shipped
checkpoint on the bundled novel, and small networks (ensembles, the wide path) at lengths
around every window edge; networks that need the whole sequence stay on PyTorch."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from longscan.devices import DEVICE_VARIABLE
from longscan.models.config import ScannerConfig
from longscan.models.onnx import NARROW, WIDE, OnnxScanNetwork, export_graphs, exportable
from longscan.models.scanner import ScannerEnsemble, ScannerModel
from longscan.scanning import N_FEATURES, Scanner, save_checkpoint
from longscan.scanning.checkpoint import verified_info

SMALL = ScannerConfig(d_model=32, n_layers=2, d_state=8, headdim=16, n_features=N_FEATURES)


def torch_logits(network, sentences, query, features) -> np.ndarray:
    with torch.no_grad():
        logits = network.scan(
            torch.from_numpy(sentences)[None],
            torch.from_numpy(query)[None],
            torch.from_numpy(features)[None],
        )
    return logits[0].double().numpy()


def test_the_shipped_scanner_ranks_the_novel_the_same(novel, monkeypatch) -> None:
    monkeypatch.setenv("LONGSCAN_RUNTIME", "onnx")
    fast = Scanner.from_pretrained()
    monkeypatch.setenv("LONGSCAN_RUNTIME", "torch")
    reference = Scanner.from_pretrained(cache=fast.cache)
    assert isinstance(fast.model, OnnxScanNetwork)
    assert isinstance(reference.model, (ScannerModel, ScannerEnsemble))  # PyTorch
    for question in ("Who fell down the rabbit hole?", "What did the Cat say to Alice?"):
        ours, theirs = fast.score(question, [novel]), reference.score(question, [novel])
        assert np.abs(ours - theirs).max() < 1e-3
        assert list(np.argsort(-ours)[:10]) == list(np.argsort(-theirs)[:10])


def test_a_later_question_imports_no_torch(novel_path: Path) -> None:
    """Once the shipped networks' ONNX graphs exist, a new process on a CPU answers a question
    without importing torch (about two seconds of a question's start), the tuned encoder
    included."""
    ask = (
        "import sys; from longscan.readers.files import read_file; "
        "from longscan.retrievers import get_retriever; "
        f"novel = read_file({str(novel_path)!r}); "
        "hits = get_retriever('scanner').retrieve('Who is the Cat?', [novel]); "
        "print(len(hits), 'torch' in sys.modules)"
    )
    on_cpu = {**os.environ, DEVICE_VARIABLE: "cpu"}  # a GPU machine's questions run on torch
    first, later = (
        subprocess.run([sys.executable, "-c", ask], env=on_cpu, capture_output=True, text=True)
        for _ in range(2)
    )
    assert first.returncode == later.returncode == 0, first.stderr + later.stderr
    assert first.stdout.split()[0] == later.stdout.split()[0] != "0"
    assert later.stdout.split()[1] == "False"


@pytest.mark.parametrize(
    ("config", "members"),
    [(SMALL, 1), (replace(SMALL, feature_skip=True), 1), (SMALL, 3)],
    ids=["one", "wide-path", "ensemble"],
)
def test_small_networks_agree_at_every_window_edge(config, members, tmp_path: Path) -> None:
    torch.manual_seed(0)
    network = ScannerModel(config) if members == 1 else ScannerEnsemble(config, members)
    for parameter in network.parameters():  # the wide path starts at zero: make it count
        parameter.data += 0.05 * torch.randn_like(parameter)
    network.eval()
    graphs = export_graphs(lambda: network, f"{members}{config.feature_skip}", members, tmp_path)
    fast = OnnxScanNetwork(config, graphs, threads=1)
    rng = np.random.default_rng(0)
    for length in (1, NARROW - 1, NARROW, WIDE - 1, WIDE, WIDE + NARROW + 1, 3 * WIDE + 7):
        sentences = rng.standard_normal((length, config.d_input)).astype(np.float32)
        sentences /= np.linalg.norm(sentences, axis=1, keepdims=True)
        query = sentences[length // 2]
        features = rng.random((length, config.n_features), dtype=np.float32)
        ours = fast.scan(sentences, query, features)
        theirs = torch_logits(network, sentences, query, features)
        assert ours.shape == (length,)
        np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-4)


def test_networks_that_read_the_whole_sequence_stay_on_torch(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LONGSCAN_RUNTIME", "onnx")
    config = replace(SMALL, bidirectional=True)
    assert not exportable(config) and exportable(SMALL)
    directory = save_checkpoint(ScannerModel(config), tmp_path / "bi", "all-MiniLM-L6-v2/ctx256")
    assert isinstance(Scanner.from_pretrained(directory).model, ScannerModel)


def test_a_corrupt_checkpoint_is_refused_before_any_graph_is_read(tmp_path: Path) -> None:
    directory = save_checkpoint(ScannerModel(SMALL), tmp_path / "c", "all-MiniLM-L6-v2/ctx256")
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        verified_info(directory)
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        Scanner.from_pretrained(directory)
