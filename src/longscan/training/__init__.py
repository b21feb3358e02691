"""Training the scanner: long-document examples, the paper's loss, and the loop."""

from longscan.training.args import TrainingArgs
from longscan.training.data import TrainingSet, build_training_set
from longscan.training.losses import weighted_bce
from longscan.training.trainer import train

__all__ = ["TrainingArgs", "TrainingSet", "build_training_set", "train", "weighted_bce"]
