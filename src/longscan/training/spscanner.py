"""Fine-tuning the token-level scanner with the paper's recipe (GPU; tiny models on CPU).

Weighted binary cross-entropy over the logits at sentence ends, the positive weight
``#neg / #pos`` of each optimiser step's batch; AdamW with betas (0.9, 0.95) and weight decay
0.01; 10% linear warm-up, then a cosine down to ``min_lr``; gradient norm clipped at 1;
bfloat16 autocast on a GPU; one epoch (SEEDS.md §1, the authors' ``evaluate.py``).

Examples are the sentence scanner's: the shared datasets' train splits at 2k/5k/10k tokens
(decontaminated the same way) and ``longscan synth`` files, read as token ids through the
checkpoint's own tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.documents import Document
from longscan.files import file_sha256
from longscan.progress import track
from longscan.scanning.spscanner import (
    TOKENIZER_FILE,
    load_spscanner,
    read_spscanner_info,
    save_spscanner,
    torch_device_type,
)
from longscan.training.options import LENGTHS_WORDS, TrainOptions

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from longscan.models.spscanner import SPScannerConfig, SPScannerModel

CPU_MAX_PARAMETERS = 10_000_000
"""Largest network (parameters outside the embedding) trained on a CPU. The 130m layout has
about 90M there: one epoch of the paper's data would take days on this project's 2 cores."""

LabelledDocument = tuple[str, Document, np.ndarray]
"""``(question, document, 0/1 label per sentence)``."""


@dataclass(frozen=True)
class SPScannerTrainConfig:
    """The paper's schedule; ``batch_size`` examples per optimiser step (accumulated)."""

    lr: float = 1e-4
    min_lr: float = 1e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_grad_norm: float = 1.0
    batch_size: int = 64
    epochs: int = 1
    seed: int = 0


@dataclass(frozen=True)
class TokenExamples:
    """Examples as flat arrays: example ``i`` is ``ids[id_offsets[i]:id_offsets[i + 1]]``
    (question, then document), its sentence ends (indices into its ids) and labels likewise."""

    ids: np.ndarray
    id_offsets: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    end_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.id_offsets) - 1

    def example(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = self.end_offsets[i], self.end_offsets[i + 1]
        return (
            self.ids[self.id_offsets[i] : self.id_offsets[i + 1]],
            self.ends[a:b],
            self.labels[a:b],
        )

    def save(self, path: Path) -> None:
        np.savez(path, **asdict(self))

    @classmethod
    def load(cls, path: Path) -> TokenExamples:
        with np.load(path, allow_pickle=False) as data:
            return cls(**{name: data[name] for name in data.files})


def tokenize_examples(tokenizer: Tokenizer, rows: Iterable[LabelledDocument]) -> TokenExamples:
    """Question tokens then document tokens, and the index of every sentence's last token."""
    from longscan.scanning.spscanner import question_tokens, tokenize_collection

    ids, ends, labels = [], [], []
    for question, document, row_labels in rows:
        question_ids = question_tokens(tokenizer, question)  # read as the scanner reads it
        collection = tokenize_collection(tokenizer, [document])
        ids.append(np.concatenate([question_ids, collection.ids]))
        ends.append(len(question_ids) + collection.ends)
        labels.append(row_labels.astype(np.float32))
    if not ids:
        raise ValueError("no training examples (check --datasets, --synthetic and the data)")

    def offsets(parts: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)

    return TokenExamples(
        np.concatenate(ids),
        offsets(ids),
        np.concatenate(ends),
        np.concatenate(labels),
        offsets(ends),
    )


def dataset_rows(
    datasets: Sequence[str],
    seeds: Sequence[int],
    lengths_words: Sequence[int],
    max_per_source: int,
    data_dir: str | None = None,
) -> list[LabelledDocument]:
    """Train-split items of the shared datasets, decontaminated as the sentence scanner's."""
    from longscan.evaluation.gold import gold_unit_labels
    from longscan.training.data import source_items
    from longscan.training.decontamination import (
        DECONTAMINATION_THRESHOLD,
        CleanParagraphs,
        contamination,
        evaluation_fingerprints,
    )

    fingerprints = evaluation_fingerprints(data_dir)
    keep = CleanParagraphs(fingerprints)
    rows = []
    for dataset in datasets:
        for words in lengths_words:
            for seed in seeds:
                for item in source_items(
                    dataset, "train", words, seed, max_per_source, data_dir, keep
                ):
                    (document,) = item.documents
                    if contamination(document, fingerprints) > DECONTAMINATION_THRESHOLD:
                        continue
                    labels = gold_unit_labels(item)[document.id].astype(np.float32)
                    if labels.sum():
                        rows.append((item.query, document, labels))
    return rows


def examples_key(tokenizer_sha256: str, settings: dict[str, Any]) -> str:
    """Names a cache of tokenized examples by what made them."""
    text = json.dumps({"tokenizer": tokenizer_sha256, **settings}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def synthetic_rows(paths: Sequence[Path]) -> list[LabelledDocument]:
    """``longscan synth`` examples (rebuilt from their sources), decontaminated like
    the sentence scanner's."""
    from longscan.training.data import usable_synthetic
    from longscan.training.decontamination import evaluation_fingerprints
    from longscan.training.synthetic_examples import read_training_examples

    if not paths:
        return []
    examples = [example for path in paths for example in read_training_examples(Path(path))]
    clean = usable_synthetic(examples, evaluation_fingerprints(corpus=True))
    return [(example.question, document, labels) for example, document, labels in clean]


def cached_examples(
    init: Path,
    datasets: Sequence[str],
    synthetic: Sequence[Path],
    seeds: Sequence[int],
    max_per_source: int,
    cache: Path | None,
    lengths_words: Sequence[int] = LENGTHS_WORDS,
) -> TokenExamples:
    """The tokenized examples, read from ``cache`` when an earlier run wrote them (so a
    machine without ``../shared/data`` can train on them), else built and written there."""
    from longscan.scanning.spscanner import load_tokenizer

    settings = {
        "datasets": list(datasets),
        "synthetic": [file_sha256(Path(p)) for p in synthetic],
        "seeds": list(seeds),
        "max_per_source": max_per_source,
        "lengths_words": list(lengths_words),
    }
    tokenizer_file = Path(init) / TOKENIZER_FILE
    key = examples_key(file_sha256(tokenizer_file), settings)
    path = None if cache is None else Path(cache) / f"token-examples-{key}.npz"
    if path is not None and path.is_file():
        return TokenExamples.load(path)
    rows = dataset_rows(datasets, seeds, lengths_words, max_per_source) if datasets else []
    examples = tokenize_examples(load_tokenizer(tokenizer_file), rows + synthetic_rows(synthetic))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        examples.save(path)
    return examples


def check_trainable(config: SPScannerConfig, device: str) -> None:
    """Refuse a network too large for the CPU, before any time is spent (counted on the
    meta device: nothing is allocated).

    Raises:
        ValueError: on a CPU, more than :data:`CPU_MAX_PARAMETERS` outside the embedding.
    """
    import torch

    from longscan.models.spscanner import SPScannerModel

    with torch.device("meta"):
        model = SPScannerModel(config)
    body = sum(p.numel() for n, p in model.named_parameters() if not n.startswith("embedding"))
    if not device.startswith("cuda") and body > CPU_MAX_PARAMETERS:
        raise ValueError(
            f"this network has {body / 1e6:.0f}M parameters outside its embedding; training "
            f"it on the CPU ({device}) is refused (limit {CPU_MAX_PARAMETERS / 1e6:.0f}M): "
            "run it where torch sees a CUDA GPU"
        )


def _schedule(config: SPScannerTrainConfig, steps: int) -> Any:
    """Linear warm-up for ``warmup`` of the steps, then a cosine from ``lr`` to ``min_lr``."""
    warmup = int(config.warmup * steps)
    floor = config.min_lr / config.lr if config.lr else 0.0

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        progress = (step - warmup) / max(1, steps - warmup)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def batch_loss(
    model: SPScannerModel,
    batch: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    device: str,
    bfloat16: bool,
    backward: bool,
) -> float:
    """The batch's weighted BCE (``pos_weight = #neg / #pos`` over the batch), mean over its
    sentences; with ``backward``, gradients accumulate example by example."""
    import torch
    import torch.nn.functional as F

    positives = sum(float(labels.sum()) for _, _, labels in batch)
    sentences = sum(len(labels) for _, _, labels in batch)
    weight = torch.tensor((sentences - positives) / max(positives, 1.0), device=device)
    total = 0.0
    for ids, ends, labels in batch:
        with torch.autocast(torch_device_type(device), dtype=torch.bfloat16, enabled=bfloat16):
            logits, _ = model(torch.from_numpy(ids)[None].to(device))
        picked = logits[0, torch.from_numpy(ends).to(device)].float()
        loss = (
            F.binary_cross_entropy_with_logits(
                picked, torch.from_numpy(labels).to(device), pos_weight=weight, reduction="sum"
            )
            / sentences
        )
        if backward:
            loss.backward()
        total += float(loss.detach())
    return total


def train_spscanner(
    init: Path,
    out: Path,
    examples: TokenExamples,
    config: SPScannerTrainConfig,
    device: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune the converted checkpoint ``init`` on ``examples`` and write it to ``out``.

    Raises:
        ValueError: the network is too large for a CPU (:func:`check_trainable`).
        CheckpointError: ``init`` cannot be loaded.
    """
    import torch

    from longscan.devices import spscanner_bfloat16, torch_device

    device = device or torch_device()
    model, _, info = load_spscanner(init)
    check_trainable(info.config, device)
    bfloat16 = spscanner_bfloat16(device)
    torch.manual_seed(config.seed)
    model.to(device).train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=(0.9, 0.95), weight_decay=config.weight_decay
    )
    order = np.concatenate(
        [
            np.random.default_rng(config.seed + epoch).permutation(len(examples))
            for epoch in range(config.epochs)
        ]
    )
    batches = [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(config, len(batches)))
    losses, started, tokens = [], time.perf_counter(), 0
    for indices in track(batches, "training the token-level scanner", enabled=progress):
        batch = [examples.example(int(i)) for i in indices]
        losses.append(batch_loss(model, batch, device, bfloat16, backward=True))
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += sum(len(ids) for ids, _, _ in batch)
    seconds = time.perf_counter() - started
    model.eval()
    trained = {
        "init": str(init),
        "init_weights_sha256": info.weights_sha256,
        "examples": len(examples),
        "config": asdict(config),
        "device": device,
        "bfloat16": bfloat16,
    }
    save_spscanner(
        model.cpu(), out, Path(init) / TOKENIZER_FILE, {**info.source, "fine_tuned": trained}
    )
    return {
        "steps": len(batches),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "seconds": seconds,
        "tokens_per_second": tokens / seconds if seconds else None,
        "device": device,
    }


def train_from_options(options: TrainOptions) -> dict[str, Any]:
    """``longscan train --token-level``: refuse a network too large for the machine before
    tokenizing the examples (or reading them from ``data_cache``), fine-tune, write the
    checkpoint; its report.

    Raises:
        ValueError: no ``init_from``, named synthetic examples, or a network too large.
        CheckpointError: ``init_from`` is not a converted checkpoint.
    """
    from longscan.devices import torch_device

    init = options.init_from
    if init is None:
        raise ValueError("--token-level fine-tunes a converted checkpoint: give --init DIR")
    if options.named_synthetic:
        raise ValueError("--named-synthetic trains the sentence scanner, not --token-level")
    check_trainable(read_spscanner_info(init).config, torch_device())
    examples = cached_examples(
        init,
        options.dataset_names,
        options.synthetic or [],
        options.builder_seeds,
        options.max_per_source,
        options.data_cache,
    )
    config = SPScannerTrainConfig(
        lr=options.lr or 1e-4,
        batch_size=options.batch_size,
        epochs=options.epochs,
        seed=options.seed,
    )
    return train_spscanner(init, options.out, examples, config)
