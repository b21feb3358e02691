"""The paper's objective: binary cross-entropy on sentence logits, positives up-weighted;
and an optional listwise term that rewards putting gold sentences at the very top."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def weighted_bce(logits: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
    """BCE over real sentences with ``pos_weight = #neg / #pos`` of this batch.

    Args:
        logits: ``(b, l)``; padded steps may hold ``-inf``.
        labels: ``(b, l)`` 0/1.
        mask: ``(b, l)`` bool, True on real sentences.

    Returns:
        The mean loss over real sentences (a scalar).
    """
    real_logits = logits[mask]
    real_labels = labels[mask].to(real_logits.dtype)
    positives = real_labels.sum()
    negatives = real_labels.numel() - positives
    pos_weight = negatives / positives.clamp(min=1.0)
    return F.binary_cross_entropy_with_logits(
        real_logits, real_labels, pos_weight=pos_weight.detach(), reduction="mean"
    )


def listwise_softmax(logits: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
    """Per example, ``-log`` of the softmax mass on its gold sentences, averaged.

    BCE scores each sentence alone; this compares the gold sentences with every other
    sentence of the same document, which is what a small word budget asks. Examples
    without a gold sentence are left out.

    Args, as for ``weighted_bce``.
    """
    masked = logits.masked_fill(~mask, float("-inf"))
    gold = masked.masked_fill(labels <= 0, float("-inf"))
    has_gold = (labels > 0).logical_and(mask).any(dim=1)
    if not bool(has_gold.any()):
        return logits.new_zeros(())
    loss = torch.logsumexp(masked, dim=1) - torch.logsumexp(gold, dim=1)
    return loss[has_gold].mean()


def accuracy_at_top(logits: Tensor, labels: Tensor, mask: Tensor, k: int = 10) -> float:
    """Share of examples with a gold sentence among their top ``k`` logits (a dev signal)."""
    hits = []
    for row in range(logits.size(0)):
        real = mask[row]
        top = torch.topk(logits[row][real], min(k, int(real.sum()))).indices
        hits.append(float(labels[row][real][top].max() > 0))
    return sum(hits) / max(len(hits), 1)
