"""Device selection: a GPU when present, else the CPU; LONGSCAN_DEVICE overrides it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from longscan.devices import DEVICE_VARIABLE, torch_device
from longscan.documents import Document


@pytest.fixture(autouse=True)
def fresh_choice() -> Iterator[None]:
    torch_device.cache_clear()
    yield
    torch_device.cache_clear()


def test_default_is_cuda_when_torch_sees_a_gpu_else_cpu(monkeypatch) -> None:
    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)
    assert torch_device() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_the_variable_chooses(monkeypatch) -> None:
    monkeypatch.setenv(DEVICE_VARIABLE, "cpu")
    assert torch_device() == "cpu"


def test_a_bad_device_name_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv(DEVICE_VARIABLE, "gpu-please")
    with pytest.raises(ValueError, match="LONGSCAN_DEVICE='gpu-please' is not a torch device"):
        torch_device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_says_so(monkeypatch) -> None:
    monkeypatch.setenv(DEVICE_VARIABLE, "cuda")
    with pytest.raises(ValueError, match="no CUDA GPU.*LONGSCAN_TORCH"):
        torch_device()


def test_the_scanner_and_encoder_run_on_the_chosen_device() -> None:
    from longscan.scanning.scanner import Scanner

    scanner = Scanner.from_pretrained()
    expected = torch.device(torch_device()).type
    assert next(scanner.model.parameters()).device.type == expected
    assert scanner.encoder.encoder.model.device.type == expected
    document = Document("d", "The key is under the stone.\n\nIt rained all day in June.")
    logits = scanner.score("Where is the key?", [document])
    assert logits.shape == (2,) and np.isfinite(logits).all() and logits[0] > logits[1]
