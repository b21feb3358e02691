"""Networks: the sentence-level Mamba-2 scanner and its configuration."""

from __future__ import annotations

from longscan.models.config import ScannerConfig
from longscan.models.scanner import (
    Block,
    Mamba2Mixer,
    MixerState,
    RMSNorm,
    ScannerEnsemble,
    ScannerModel,
    ScannerOutput,
    ScannerState,
)

__all__ = [
    "Block",
    "Mamba2Mixer",
    "MixerState",
    "RMSNorm",
    "ScannerConfig",
    "ScannerEnsemble",
    "ScannerModel",
    "ScannerOutput",
    "ScannerState",
]
