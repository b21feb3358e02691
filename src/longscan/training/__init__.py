"""Training the scanner: long-document examples, the paper's loss, and the loop.

The names below load on first use: the command line reads ``training.options`` for its help,
which must not wait for torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from longscan.training.args import TrainingArgs
    from longscan.training.data import TrainingSet, build_training_set
    from longscan.training.losses import weighted_bce
    from longscan.training.trainer import train

_MODULES = {
    "TrainingArgs": "args",
    "TrainingSet": "data",
    "build_training_set": "data",
    "train": "trainer",
    "weighted_bce": "losses",
}

__all__ = ["TrainingArgs", "TrainingSet", "build_training_set", "train", "weighted_bce"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULES[name]}"), name)
