"""Networks: the sentence-level Mamba-2 scanner and its configuration.

The PyTorch classes load on first use, so reading a configuration, or running an exported
network through ONNX Runtime (``longscan.models.onnx``), does not import torch.
"""

from __future__ import annotations

from typing import Any

from longscan.models.config import ScannerConfig

_NETWORKS = (
    "Block",
    "Mamba2Mixer",
    "MixerState",
    "RMSNorm",
    "ScannerEnsemble",
    "ScannerModel",
    "ScannerOutput",
    "ScannerState",
)


def __getattr__(name: str) -> Any:
    if name in _NETWORKS:
        from longscan.models import scanner

        return getattr(scanner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ScannerConfig", *_NETWORKS]
