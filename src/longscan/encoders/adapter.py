"""LoRA adapters over packaged models, shipped as small hash-checked files.

A fine-tuned model ships as its low-rank updates (and a fresh head, if it has one), never as
a second copy of its weights: ``adapter.safetensors`` beside a ``config.json`` that names the
base model, the package version and the weights' SHA-256. Loading checks all three, then
merges each update into a copy of the packaged weights (``W + B @ A * alpha / r``), so
inference costs exactly a plain pass of the base model and needs no ``peft``. The
cross-encoder re-scorer, the extractive reader and the fine-tuned bi-encoder (over MiniLM)
and CFIC's reader (over Gemma 3 270M) are read this way.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from longscan.files import file_sha256

WEIGHTS_FILE = "adapter.safetensors"
CONFIG_FILE = "config.json"
BASE_MODEL = "all-MiniLM-L6-v2"  # the encoders' base; a causal LM's adapter names its own
HEAD = "classifier"  # a cross-encoder's scoring head; a bi-encoder has none


class AdapterError(ValueError):
    """An adapter directory that cannot be loaded: missing, corrupt or mismatched files."""


@dataclass(frozen=True)
class AdapterConfig:
    """How the adapter was built; saved beside the weights and checked on load.

    Attributes:
        rank: LoRA rank r.
        alpha: LoRA scaling numerator (updates are scaled by ``alpha / rank``).
        target_modules: Names of the base model's linear layers that carry an update.
        max_length: Tokens read per input (for a causal LM: the longest training sequence).
        headings: A cross-encoder's passages carry the heading line a sentence sits under
            (``sentence_in_context``), as mining writes them; an adapter whose config
            predates the field was trained without and keeps reading without.
    """

    rank: int = 16
    alpha: int = 32
    target_modules: tuple[str, ...] = ("query", "key", "value", "dense")
    max_length: int = 128
    headings: bool = True


@dataclass(frozen=True)
class Adapter:
    """A checked adapter file: its configuration, tensors and SHA-256 (``digest``)."""

    config: AdapterConfig
    tensors: dict[str, Any]
    digest: str


def read_adapter(directory: str | Path, rebuild: str, base_model: str = BASE_MODEL) -> Adapter:
    """Read and check an adapter directory made for ``base_model``; ``rebuild`` names the
    command that makes one.

    Raises:
        AdapterError: a file is missing, the weights' hash or the base model differs from
            the config, or the weights are not readable safetensors.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    config, digest = checked_adapter_config(directory, rebuild, base_model)
    weights_path = Path(directory) / WEIGHTS_FILE
    try:
        tensors = load_file(str(weights_path))
    except (SafetensorError, OSError) as error:
        raise AdapterError(f"{weights_path}: unreadable safetensors ({error})") from error
    return Adapter(config, tensors, digest)


def checked_adapter_config(
    directory: str | Path, rebuild: str, base_model: str = BASE_MODEL
) -> tuple[AdapterConfig, str]:
    """An adapter's configuration and its weights' SHA-256, checked against the config,
    without loading the tensors (nor torch): what an ONNX export of it is keyed by.

    Raises:
        AdapterError: a file is missing, or the weights' hash or the base model differs.
    """
    directory = Path(directory)
    config_path, weights_path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
    for path in (config_path, weights_path):
        if not path.is_file():
            raise AdapterError(f"{path}: missing; rebuild it with `{rebuild}`")
    try:
        meta = json.loads(config_path.read_text(encoding="utf-8"))
        config = AdapterConfig(
            **{
                "headings": False,  # absent from configs written before headings were read
                **meta["adapter"],
                "target_modules": tuple(meta["adapter"]["target_modules"]),
            }
        )
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise AdapterError(f"{config_path}: not an adapter config ({error})") from error
    if meta.get("base_model") != base_model:
        raise AdapterError(
            f"{config_path}: adapter for {meta.get('base_model')!r}, not {base_model!r}"
        )
    digest = file_sha256(weights_path)
    if digest != meta.get("sha256"):
        raise AdapterError(
            f"{weights_path}: SHA-256 {digest[:12]}… differs from the config's "
            f"{str(meta.get('sha256'))[:12]}…; the file is corrupt or was replaced"
        )
    return config, digest


def save_adapter(
    directory: Path,
    tensors: dict[str, Any],
    adapter: AdapterConfig,
    card: dict[str, Any],
    version: str,
    base_model: str = BASE_MODEL,
) -> str:
    """Write ``adapter.safetensors`` and ``config.json`` (hash, base, version, training card);
    returns the weights' SHA-256."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / WEIGHTS_FILE
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(weights))
    digest = file_sha256(weights)
    config = {
        "base_model": base_model,
        "longscan_version": version,
        "sha256": digest,
        "adapter": {**asdict(adapter), "target_modules": list(adapter.target_modules)},
        "training": card,
    }
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return digest


def adapter_tensors(model: Any) -> dict[str, Any]:
    """The trainable tensors of a peft-wrapped model under plain names:
    ``<linear>.lora_A`` ``(r, in)``, ``<linear>.lora_B`` ``(out, r)`` and a fresh head's
    ``<head>.weight`` and ``<head>.bias`` (a cross-encoder's ``classifier``, the extractive
    reader's ``qa_outputs``)."""
    result = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        if ".modules_to_save." in name:  # classifier.modules_to_save.default.weight
            plain = name.split(".modules_to_save.")[0] + "." + name.rsplit(".", 1)[1]
        else:  # bert.encoder.layer.0.attention.self.query.lora_A.default.weight
            plain = name.split(".default")[0]
        result[plain] = parameter
    return result


def merge_adapter(model: Any, adapter: Adapter, path: Path, head: str = HEAD) -> None:
    """Add each low-rank update to its linear layer and load the head (the layer named
    ``head``, if ``model`` has one), in place.

    Raises:
        AdapterError: a tensor names no layer of ``model`` or has the wrong shape.
    """
    import torch

    tensors, config = adapter.tensors, adapter.config
    layers = dict(model.named_modules())
    scaling = config.alpha / config.rank
    expected = set()
    with torch.no_grad():
        for name, module in layers.items():
            if not isinstance(module, torch.nn.Linear) or name == head:
                continue
            if name.split(".")[-1] in config.target_modules:
                expected.update((f"{name}.lora_A", f"{name}.lora_B"))
                a, b = tensors.get(f"{name}.lora_A"), tensors.get(f"{name}.lora_B")
                if a is None or b is None or b.shape[0] != module.out_features:
                    raise AdapterError(f"{path}: no fitting LoRA update for {name}")
                if a.shape != (config.rank, module.in_features):
                    raise AdapterError(f"{path}: {name}.lora_A has shape {tuple(a.shape)}")
                module.weight += ((b @ a) * scaling).to(module.weight)
        if head in layers:
            for key in ("weight", "bias"):
                value = tensors.get(f"{head}.{key}")
                target = getattr(layers[head], key)
                if value is None or value.shape != target.shape:
                    raise AdapterError(f"{path}: {head}.{key} is missing or mis-shaped")
                target.copy_(value)
                expected.add(f"{head}.{key}")
    unknown = set(tensors) - expected
    if unknown:
        raise AdapterError(f"{path}: tensors that fit no layer: {sorted(unknown)[:3]}")


__all__ = [
    "Adapter",
    "AdapterConfig",
    "AdapterError",
    "adapter_tensors",
    "merge_adapter",
    "read_adapter",
    "save_adapter",
]
