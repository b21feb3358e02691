"""One checkpoint from several trained by the same recipe with other seeds (mean logit)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longscan.models.scanner import ScannerEnsemble, ScannerModel
from longscan.scanning.checkpoint import load_checkpoint, save_checkpoint
from longscan.training.card import ensemble_card

REPORT_FILE = "training.json"
CARD_FILE = "MODEL_CARD.md"


def combine_checkpoints(members: Sequence[Path], out_dir: Path, command: str) -> Path:
    """Write an ensemble checkpoint of ``members`` with a model card naming each of them.

    Raises:
        ValueError: fewer than two members, a member that is not a `longscan train` output
            or is itself an ensemble, or members of another config, encoder, feature set or
            token match.
        CheckpointError: a member fails to load.
    """
    if len(members) < 2:
        raise ValueError("name two or more checkpoints to combine")
    loaded = [load_checkpoint(Path(path)) for path in members]
    first = loaded[0][1]
    for path, (model, info) in zip(members, loaded, strict=True):
        if not isinstance(model, ScannerModel):
            raise ValueError(f"{path} is already an ensemble; combine its members instead")
        if (info.config, info.encoder, info.features, info.token_match) != (
            first.config,
            first.encoder,
            first.features,
            first.token_match,
        ):
            raise ValueError(
                f"{path}: another config, encoder, feature set or token match than {members[0]}"
            )
    reports, cards = zip(*(_trained(Path(path)) for path in members), strict=True)
    ensemble = ScannerEnsemble(first.config, len(members))
    for slot, (model, _) in zip(ensemble.members, loaded, strict=True):
        slot.load_state_dict(model.state_dict())
    metadata = {"members": [info.metadata for _, info in loaded]}
    save_checkpoint(
        ensemble, out_dir, first.encoder, metadata, first.token_match, first.encoder_adapter
    )
    report = {"members": list(reports)}
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / CARD_FILE).write_text(ensemble_card(list(reports), cards[0], command))
    return out_dir


def _trained(directory: Path) -> tuple[dict[str, Any], str]:
    """The training report and model card that `longscan train` wrote beside the weights."""
    if not (directory / REPORT_FILE).is_file() or not (directory / CARD_FILE).is_file():
        raise ValueError(
            f"{directory}: no {REPORT_FILE} and {CARD_FILE}; not a `longscan train` output"
        )
    report = json.loads((directory / REPORT_FILE).read_text(encoding="utf-8"))
    return report, (directory / CARD_FILE).read_text(encoding="utf-8")
