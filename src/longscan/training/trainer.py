"""The training loop: AdamW, cosine schedule with warm-up, clipping, accumulation."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from longscan.models.scanner import ScannerModel
from longscan.progress import Bar
from longscan.scanning.features import feature_columns
from longscan.training.args import TrainingArgs
from longscan.training.data import TrainingSet, batches
from longscan.training.losses import accuracy_at_top, listwise_softmax, weighted_bce


def cosine_with_warmup(total_steps: int, warmup_ratio: float):  # noqa: ANN201 - a lambda
    """LR multiplier: linear warm-up over ``warmup_ratio`` of the steps, then cosine to 0."""
    warmup = max(1, int(total_steps * warmup_ratio))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total_steps - warmup)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))

    return factor


def _parameter_groups(model: ScannerModel, weight_decay: float) -> list[dict[str, Any]]:
    """Decay matrices only; norms, biases and the SSM's A, D, dt parameters are not decayed."""
    decay, keep = [], []
    for name, parameter in model.named_parameters():
        is_matrix = parameter.dim() >= 2 and not name.endswith(("A_log", "D", "dt_bias"))
        (decay if is_matrix else keep).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": keep, "weight_decay": 0.0}]


@torch.no_grad()
def evaluate_loss(model: ScannerModel, data: TrainingSet, batch_size: int) -> dict[str, float]:
    """Dev loss and the share of examples with a gold sentence in the top 10."""
    model.eval()
    losses, hits, count = [], 0.0, 0
    generator = torch.Generator().manual_seed(0)
    read = feature_columns(model.config)
    for sentences, query, features, labels, mask in batches(data, batch_size, generator, False):
        features = features[..., read]
        logits = model(sentences, query, features, mask).logits
        losses.append(float(weighted_bce(logits, labels, mask)) * len(query))
        hits += accuracy_at_top(logits, labels, mask, 10) * len(query)
        count += len(query)
    model.train()
    return {"dev_loss": sum(losses) / max(count, 1), "dev_top10_hit": hits / max(count, 1)}


def train(
    args: TrainingArgs,
    train_set: TrainingSet,
    dev_set: TrainingSet | None = None,
    progress: bool = True,
    max_steps: int | None = None,
    initial: ScannerModel | None = None,
) -> tuple[ScannerModel, dict[str, Any]]:
    """Train a scanner on precomputed sentence vectors, from scratch or, with ``initial``,
    fine-tuning that model (which may read fewer feature columns than the data holds).

    Returns:
        The trained model (in eval mode) and a history: per-step losses, dev metrics per
        epoch, wall time.
    """
    if len(train_set) == 0:
        raise ValueError("no training examples")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(args.seed)
    model = initial if initial is not None else ScannerModel(args.model)
    model.train()
    optimizer = torch.optim.AdamW(
        _parameter_groups(model, args.weight_decay), lr=args.lr, betas=args.betas
    )
    per_epoch = math.ceil(math.ceil(len(train_set) / args.batch_size) / args.accumulation)
    total = per_epoch * args.epochs if max_steps is None else max_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, cosine_with_warmup(total, args.warmup_ratio)
    )
    history: dict[str, Any] = {"loss": [], "dev": [], "optimizer_steps": 0}
    started = time.perf_counter()
    bar = Bar("training", total=total, enabled=progress).start()
    step = 0
    read = feature_columns(model.config)
    for epoch in range(args.epochs):
        micro = 0
        for sentences, query, features, labels, mask in batches(
            train_set, args.batch_size, generator
        ):
            features = features[..., read]
            logits = model(sentences, query, features, mask).logits
            loss = weighted_bce(logits, labels, mask)
            if args.listwise:
                loss = loss + args.listwise * listwise_softmax(logits, labels, mask)
            (loss / args.accumulation).backward()
            history["loss"].append(float(loss.detach()))
            micro += 1
            if micro % args.accumulation:
                continue
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            recent = history["loss"][-20:]
            bar.advance()
            bar.update(note=f"loss {sum(recent) / len(recent):.3f}")
            if step >= total:
                break
        if dev_set is not None and len(dev_set):
            history["dev"].append({"epoch": epoch + 1, **evaluate_loss(model, dev_set, 16)})
        if step >= total:
            break
    bar.close()
    history["optimizer_steps"] = step
    history["seconds"] = time.perf_counter() - started
    model.eval()
    return model, history
