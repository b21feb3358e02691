"""What the cross-encoder's and the bi-encoder's fine-tuning share: the optional training
dependencies, LoRA over MiniLM's layers, and the Hugging Face trainer's arguments."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from longscan.encoders.adapter import AdapterConfig
from longscan.extras import install_hint

LOG_POINTS = 50  # losses logged per run (the model card keeps them)


class Recipe(Protocol):
    """The fields every fine-tuning recipe has."""

    epochs: float
    batch_size: int
    learning_rate: float
    warmup_ratio: float
    seed: int
    adapter: AdapterConfig


def dataset_class() -> Any:
    """``datasets.Dataset``, or an ImportError that names the extra to install."""
    try:
        from datasets import Dataset
    except ImportError as error:
        raise _missing(error) from error
    return Dataset


def add_lora(model: Any, adapter: AdapterConfig, **options: Any) -> None:
    """Wrap ``model``'s target layers in trainable low-rank updates (dropout 0.1); the base
    weights stay frozen."""
    try:
        from peft import LoraConfig
    except ImportError as error:
        raise _missing(error) from error
    model.add_adapter(
        LoraConfig(
            r=adapter.rank,
            lora_alpha=adapter.alpha,
            target_modules=list(adapter.target_modules),
            lora_dropout=0.1,
            **options,
        )
    )


def trainer_arguments(
    arguments: type,
    scratch: str,
    recipe: Recipe,
    examples: int,
    progress: bool,
    device: str = "cpu",
    **extra: Any,
) -> Any:
    """``arguments`` (a sentence-transformers training-arguments class) for ``recipe``: cosine
    schedule, clipped gradients, fixed seeds, float32 on ``device`` (so a GPU run follows the
    CPU recipe), nothing saved but the final adapter."""
    return arguments(
        output_dir=scratch,
        num_train_epochs=recipe.epochs,
        per_device_train_batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate,
        warmup_steps=recipe.warmup_ratio,  # a float below 1 is a fraction of the steps
        lr_scheduler_type="cosine",
        max_grad_norm=1.0,
        seed=recipe.seed,
        data_seed=recipe.seed,
        logging_steps=max(1, examples // recipe.batch_size // LOG_POINTS),
        save_strategy="no",
        report_to="none",
        use_cpu=device == "cpu",
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        **extra,
    )


def logged_losses(trainer: Any) -> list[float]:
    """The training losses the trainer logged, in order."""
    return [round(float(e["loss"]), 4) for e in trainer.state.log_history if "loss" in e]


def recipe_card(recipe: Recipe, loss: str) -> dict[str, Any]:
    """The recipe as the model card records it (the adapter's shape is saved apart)."""
    fields = asdict(recipe)  # type: ignore[call-overload]  # a dataclass, typed by its fields
    return {**{k: v for k, v in fields.items() if k != "adapter"}, "loss": loss}


def load_start(module: Any, directory: str, adapter: AdapterConfig, rebuild: str) -> str:
    """Copy the adapter in ``directory`` into ``module``'s fresh LoRA updates (and head), so
    training goes on from it rather than from zero; returns its weights' SHA-256 for the
    model card. ``rebuild`` names the command that makes such an adapter.

    Raises:
        AdapterError: unreadable, or shaped unlike ``adapter``.
    """
    import torch

    from longscan.encoders.adapter import AdapterError, adapter_tensors, read_adapter

    start = read_adapter(directory, rebuild=rebuild)
    if start.config != adapter:
        raise AdapterError(f"{directory}: {start.config} is not {adapter}")
    trainable = adapter_tensors(module)
    if set(trainable) != set(start.tensors):
        raise AdapterError(f"{directory}: its tensors name other layers")
    with torch.no_grad():
        for name, parameter in trainable.items():
            parameter.copy_(start.tensors[name].reshape(parameter.shape))
    return start.digest


def _missing(error: ImportError) -> ImportError:
    return ImportError(f"fine-tuning: {install_hint(error) or error}", name=error.name)
