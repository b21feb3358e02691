"""Device selection: a GPU when present, else the CPU; LONGSCAN_DEVICE overrides it. The
cross-encoder's precision: bfloat16 where the CPU has it in hardware; LONGSCAN_PRECISION
overrides it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from longscan.devices import DEVICE_VARIABLE, PRECISION_VARIABLE, cpu_bfloat16, torch_device
from longscan.documents import Document
from longscan.encoders.minilm import DEFAULT_ENCODER, QUANTIZED

QUANTIZED_ENCODER = DEFAULT_ENCODER + QUANTIZED


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


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_the_scanner_and_encoder_run_on_the_chosen_device(runtime: str, monkeypatch) -> None:
    """PyTorch runs them on the chosen device; ONNX Runtime (the CPU's default) on the CPU.
    The shipped scanner reads the int8 encoder, which only ONNX Runtime's CPU kernels run."""
    from longscan.models.onnx import OnnxScanNetwork
    from longscan.scanning.scanner import Scanner

    monkeypatch.setenv("LONGSCAN_RUNTIME", runtime)
    scanner = Scanner.from_pretrained()
    expected = torch.device(torch_device()).type if runtime == "torch" else "cpu"
    if runtime == "torch":
        assert next(scanner.model.parameters()).device.type == expected
    else:
        assert isinstance(scanner.model, OnnxScanNetwork)
    int8 = scanner.encoder.name.startswith(QUANTIZED_ENCODER)
    assert torch.device(scanner.encoder.encoder.body.device).type == ("cpu" if int8 else expected)
    document = Document("d", "The key is under the stone.\n\nIt rained all day in June.")
    logits = scanner.score("Where is the key?", [document])
    assert logits.shape == (2,) and np.isfinite(logits).all() and logits[0] > logits[1]


def test_bfloat16_is_chosen_by_the_cpu_unless_the_variable_says(monkeypatch) -> None:
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
    hardware = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert cpu_bfloat16() == hardware
    monkeypatch.setenv(PRECISION_VARIABLE, "float32")
    assert cpu_bfloat16() is False
    monkeypatch.setenv(PRECISION_VARIABLE, " BFloat16 ")
    assert cpu_bfloat16() is True
    monkeypatch.setenv(PRECISION_VARIABLE, "fp8")
    with pytest.raises(ValueError, match="LONGSCAN_PRECISION='fp8': use float32 or bfloat16"):
        cpu_bfloat16()
