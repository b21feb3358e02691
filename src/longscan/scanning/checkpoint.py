"""Scanner checkpoints: a directory with ``config.json`` and ``model.safetensors``.

A checkpoint holds one scan network or an ensemble of several of one config (``members`` in
the config; their logits are averaged).

Weights load only from safetensors (never by unpickling). The config records the package
version, the encoder and feature set the weights were trained with, and the SHA-256 of the
weights file; loading checks all of them, so a corrupt, truncated or mismatched checkpoint
fails with a message instead of scoring garbage.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from longscan import __version__
from longscan.encoders import adapter as adapter_files
from longscan.files import file_sha256
from longscan.models.config import ScannerConfig
from longscan.scanning.features import (
    DEFAULT_TOKEN_MATCH,
    FEATURE_NAMES,
    LEGACY_TOKEN_MATCH,
    TokenMatch,
    feature_names,
)

if TYPE_CHECKING:  # torch loads only with a network, never for reading a config
    from longscan.models.scanner import ScannerEnsemble, ScannerModel

FORMAT = "longscan-scanner"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
ENCODER_ADAPTER_DIR = "encoder-adapter"  # a fine-tuned encoder's adapter, copied in
# both vouched for: the adapter's config holds its scaling, which changes the merged weights too
ENCODER_ADAPTER_FILES = (adapter_files.WEIGHTS_FILE, adapter_files.CONFIG_FILE)
DEFAULT_CHECKPOINT = "scanner-minilm"

ScanNetwork: TypeAlias = "ScannerModel | ScannerEnsemble"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint says about itself besides the weights."""

    config: ScannerConfig
    encoder: str
    features: tuple[str, ...]
    metadata: dict[str, Any]
    members: int = 1
    token_match: TokenMatch = DEFAULT_TOKEN_MATCH
    encoder_adapter: Path | None = None


def default_checkpoint_dir() -> Path:
    """The checkpoint shipped inside the package."""
    return Path(str(resources.files("longscan") / "checkpoints" / DEFAULT_CHECKPOINT))


def save_checkpoint(
    model: ScanNetwork,
    directory: Path,
    encoder: str,
    metadata: dict[str, Any] | None = None,
    token_match: TokenMatch = DEFAULT_TOKEN_MATCH,
    encoder_adapter: Path | None = None,
) -> Path:
    """Write weights (and a copy of the encoder's adapter folder, if it has one), then the
    config that vouches for them (with their hashes)."""
    import shutil

    from safetensors.torch import save_file

    from longscan.models.scanner import ScannerEnsemble

    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / WEIGHTS_FILE
    state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    save_file(state, str(weights), metadata={"format": FORMAT})
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "longscan_version": __version__,
        "model": model.config.to_dict(),
        "members": len(model.members) if isinstance(model, ScannerEnsemble) else 1,
        "encoder": encoder,
        "features": list(feature_names(model.config)),
        "token_match": asdict(token_match),
        "weights_sha256": file_sha256(weights),
        "metadata": metadata or {},
    }
    if encoder_adapter is not None:
        copy = directory / ENCODER_ADAPTER_DIR
        copy.mkdir(exist_ok=True)
        for name in ENCODER_ADAPTER_FILES:
            shutil.copyfile(encoder_adapter / name, copy / name)
        config["encoder_adapter_sha256"] = {
            name: file_sha256(copy / name) for name in ENCODER_ADAPTER_FILES
        }
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    return directory


def read_info(directory: Path) -> tuple[CheckpointInfo, dict[str, Any]]:
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(f"{directory}: not a scanner checkpoint (no {CONFIG_FILE})")
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{config_path}: corrupt config ({error})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CheckpointError(f"{config_path}: not a {FORMAT} config")
    if raw.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{config_path}: format version {raw.get('format_version')} is not supported "
            f"(this longscan reads version {FORMAT_VERSION})"
        )
    features = tuple(raw.get("features", ()))
    unknown = [name for name in features if name not in FEATURE_NAMES]
    if unknown:  # newer features are appended, never renamed
        raise CheckpointError(
            f"{config_path}: trained with features {unknown} that this longscan does not "
            f"compute (it computes {FEATURE_NAMES})"
        )
    try:
        config = ScannerConfig.from_dict(raw["model"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{config_path}: invalid model config ({error})") from None
    if feature_names(config) != features:
        raise CheckpointError(
            f"{config_path}: the model reads features {feature_names(config)} but "
            f"{features} are named"
        )
    members = raw.get("members", 1)  # configs written before ensembles have no such key
    if isinstance(members, bool) or not isinstance(members, int) or members < 1:
        raise CheckpointError(f"{config_path}: members must be a positive integer, got {members!r}")
    encoder = str(raw.get("encoder", ""))
    try:  # configs written before the settings were recorded used the legacy ones
        token_match = (
            TokenMatch.recorded(raw["token_match"]) if "token_match" in raw else LEGACY_TOKEN_MATCH
        )
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{config_path}: invalid token_match ({error})") from None
    metadata = raw.get("metadata", {})
    adapter = directory / ENCODER_ADAPTER_DIR if "encoder_adapter_sha256" in raw else None
    info = CheckpointInfo(config, encoder, features, metadata, members, token_match, adapter)
    return info, raw


def verified_info(directory: Path) -> tuple[CheckpointInfo, str]:
    """The checkpoint's config and its weights' SHA-256, after checking the weights file has
    that hash (without loading it, so without torch).

    Raises:
        CheckpointError: missing files, a corrupt config, or weights that do not match it.
    """
    info, raw = read_info(directory)
    if info.encoder_adapter is not None:
        recorded = raw["encoder_adapter_sha256"]
        if not isinstance(recorded, dict) or not recorded:
            raise CheckpointError(f"{directory / CONFIG_FILE}: invalid encoder_adapter_sha256")
        for name in ENCODER_ADAPTER_FILES:  # each of them, whatever the config lists
            checked_file(info.encoder_adapter, name, recorded.get(name))
    return info, checked_file(directory, WEIGHTS_FILE, raw.get("weights_sha256"))


def checked_file(directory: Path, name: str, recorded: object) -> str:
    """The SHA-256 of ``directory / name``, after checking it is the one its config
    recorded.

    Raises:
        CheckpointError: the file is missing, or its hash is not ``recorded``.
    """
    file = directory / name
    if not file.is_file():
        raise CheckpointError(f"{directory}: missing {name}")
    digest = file_sha256(file)
    if digest != recorded:
        raise CheckpointError(
            f"{file}: SHA-256 does not match {CONFIG_FILE}; the file is corrupt or was replaced"
        )
    return digest


def load_checkpoint(directory: Path | None = None) -> tuple[ScanNetwork, CheckpointInfo]:
    """Load a checkpoint after checking its config and the hash of its weights.

    Raises:
        CheckpointError: missing files, corrupt config or weights, hash or shape mismatch.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from longscan.models.scanner import ScannerEnsemble, ScannerModel

    directory = Path(directory) if directory is not None else default_checkpoint_dir()
    info, _ = verified_info(directory)
    weights = directory / WEIGHTS_FILE
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{weights}: unreadable safetensors ({error})") from None
    model: ScanNetwork = (
        ScannerModel(info.config)
        if info.members == 1
        else ScannerEnsemble(info.config, info.members)
    )
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise CheckpointError(f"{weights}: weights do not fit the config ({error})") from None
    model.eval()
    return model, info
