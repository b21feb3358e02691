"""Scanning: the trained state-space scanner, its features and its checkpoints."""

from longscan.scanning.checkpoint import (
    CheckpointError,
    default_checkpoint_dir,
    load_checkpoint,
    save_checkpoint,
)
from longscan.scanning.features import FEATURE_NAMES, N_FEATURES, LexicalFeatures
from longscan.scanning.scanner import Scanner, SlidingWindow

__all__ = [
    "FEATURE_NAMES",
    "N_FEATURES",
    "CheckpointError",
    "LexicalFeatures",
    "Scanner",
    "SlidingWindow",
    "default_checkpoint_dir",
    "load_checkpoint",
    "save_checkpoint",
]
