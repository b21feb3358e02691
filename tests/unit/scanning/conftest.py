from __future__ import annotations

from pathlib import Path

import pytest
import torch

from longscan.encoders.cache import EmbeddingCache
from longscan.models.config import ScannerConfig
from longscan.models.scanner import ScannerModel
from longscan.scanning import N_FEATURES, Scanner, save_checkpoint
from longscan.scanning.checkpoint import load_checkpoint


def tiny_model(bidirectional: bool = True, seed: int = 0) -> ScannerModel:
    torch.manual_seed(seed)
    config = ScannerConfig(
        d_model=32,
        n_layers=2,
        d_state=8,
        headdim=16,
        chunk_size=16,
        n_features=N_FEATURES,
        bidirectional=bidirectional,
    )
    return ScannerModel(config).eval()


@pytest.fixture
def make_tiny_model():
    return tiny_model


@pytest.fixture
def tiny_checkpoint(tmp_path: Path) -> Path:
    return save_checkpoint(tiny_model(), tmp_path / "ckpt", "all-MiniLM-L6-v2/ctx256")


@pytest.fixture
def tiny_scanner(tiny_checkpoint: Path, tmp_path: Path) -> Scanner:
    model, info = load_checkpoint(tiny_checkpoint)
    return Scanner(model, info, cache=EmbeddingCache(tmp_path / "sentences"))
