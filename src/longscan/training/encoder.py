"""Fine-tuning the bi-encoder (the MiniLM that turns sentences into vectors) on the
cross-encoder's mined pairs, with ``MultipleNegativesRankingLoss``.

The frozen MiniLM was trained to match paraphrases, not questions to the sentences that
answer them. Each first-round pair of ``training.reranker`` gives a (question, gold
sentence) and the look-alikes BM25 and dense ranked above it in the same document; the loss
pulls the question toward its sentence and away from its hard negative and from every other
sentence in the batch. Only the sentence itself is read (the passage's context after
``[SEP]`` is the cross-encoder's input, not what the scanner's vectors see).

What is saved is a LoRA adapter in ``encoders.adapter``'s format; ``get_encoder(adapter=DIR)``
merges it, and its hash joins the encoder name that keys every vector cache.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscan.encoders.adapter import AdapterConfig, adapter_tensors, save_adapter
from longscan.rerankers.cross_encoder import CONTEXT_SEPARATOR
from longscan.training.finetune import (
    add_lora,
    dataset_class,
    load_start,
    logged_losses,
    recipe_card,
    trainer_arguments,
)
from longscan.training.reranker import SYNTHETIC_SOURCE, Pair

MNRL_SCALE = 20.0  # sentence-transformers' default: cosine similarities times 20 as logits
PROBE_TRIPLETS = 256  # triplets whose loss is measured before and after training


@dataclass(frozen=True)
class Triplet:
    """A question, a sentence that answers it, and a look-alike of its document that
    does not."""

    anchor: str
    positive: str
    negative: str


@dataclass(frozen=True)
class EncoderTrainConfig:
    """The fine-tuning recipe (the model card records it)."""

    epochs: float = 1.0
    batch_size: int = 64
    learning_rate: float = 2e-4
    warmup_ratio: float = 0.1
    seed: int = 0
    # word pieces per text while training: a batch pads to its longest text, and questions
    # and sentences rarely run longer (encoding later reads up to MiniLM's 256)
    adapter: AdapterConfig = AdapterConfig(max_length=64)
    # an adapter folder to start from instead of a fresh one: a shipped bi-encoder trained
    # further on new pairs (with some of its old ones replayed) keeps what it had learned
    init_from: str | None = None


def sentence_of(passage: str) -> str:
    """The sentence a cross-encoder passage starts with (its context cut off)."""
    return passage.split(CONTEXT_SEPARATOR, 1)[0]


def encoder_triplets(pairs: Sequence[Pair], seed: int = 0) -> list[Triplet]:
    """One triplet per first-round positive: its question, the sentence, and one of the
    question's negatives in mined order (BM25's hardest first), shuffled with ``seed``.

    Second-round pairs are left out: their queries (a question joined with a hop) never
    reach the bi-encoder.
    """
    by_query: dict[str, tuple[list[str], list[str]]] = {}
    for pair in pairs:
        if pair.kind != "hop1":
            continue
        positives, negatives = by_query.setdefault(pair.query, ([], []))
        (positives if pair.label == 1.0 else negatives).append(sentence_of(pair.passage))
    triplets = [
        Triplet(query, positive, negatives[k % len(negatives)])
        for query, (positives, negatives) in by_query.items()
        if negatives
        for k, positive in enumerate(positives)
    ]
    random.Random(seed).shuffle(triplets)
    return triplets


def _probe_loss(model: Any, triplets: Sequence[Triplet]) -> float:
    """The training objective over ``triplets`` as one batch, without dropout."""
    import torch

    def encode(texts: list[str]) -> Any:
        return model.encode(
            texts, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False
        )

    anchors = encode([t.anchor for t in triplets])
    candidates = encode([t.positive for t in triplets] + [t.negative for t in triplets])
    logits = anchors @ candidates.T * MNRL_SCALE
    labels = torch.arange(len(triplets), device=logits.device)
    return float(torch.nn.functional.cross_entropy(logits, labels))


def train_encoder(
    triplets: Sequence[Triplet],
    out_dir: Path,
    config: EncoderTrainConfig = EncoderTrainConfig(),
    card: dict[str, Any] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune a LoRA adapter over the packaged MiniLM on ``triplets`` (in-batch and hard
    negatives; no question twice in a batch) and save it to ``out_dir``. Returns the
    training report (losses, steps, seconds)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import (
        BatchSamplers,
        SentenceTransformerTrainingArguments,
    )

    from longscan import __version__
    from longscan.devices import device_name
    from longscan.encoders.minilm import packaged_model

    if not triplets:
        raise ValueError("no training triplets")
    dataset = dataset_class()
    torch.manual_seed(config.seed)
    model = packaged_model()
    device = str(model.device)  # where packaged_model put it: the trainer must not move it
    model.max_seq_length = config.adapter.max_length
    add_lora(model, config.adapter, task_type="FEATURE_EXTRACTION")
    started_from = None
    if config.init_from is not None:
        started_from = load_start(
            model[0].auto_model, config.init_from, config.adapter, "longscan train-encoder"
        )
    data = dataset.from_dict(
        {
            "anchor": [t.anchor for t in triplets],
            "positive": [t.positive for t in triplets],
            "negative": [t.negative for t in triplets],
        }
    )
    probe = list(triplets[:PROBE_TRIPLETS])
    model.eval()
    initial = _probe_loss(model, probe)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="longscan-bi-") as scratch:
        args = trainer_arguments(
            SentenceTransformerTrainingArguments,
            scratch,
            config,
            len(triplets),
            progress,
            device,
            batch_sampler=BatchSamplers.NO_DUPLICATES,
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=data,
            loss=MultipleNegativesRankingLoss(model, scale=MNRL_SCALE),
        )
        result = trainer.train()
    model.eval()
    loss = f"MultipleNegativesRankingLoss (scale {MNRL_SCALE:g}), one hard negative"
    report = {
        "initial_loss": round(initial, 4),
        "final_loss": round(_probe_loss(model, probe), 4),
        "triplets": len(triplets),
        "steps": int(result.global_step),
        "seconds": round(time.perf_counter() - started, 1),
        "device": device_name(device),
        "losses": logged_losses(trainer),
        "recipe": recipe_card(config, loss),
        "init_from_sha256": started_from,
    }
    tensors = adapter_tensors(model[0].auto_model)
    save_adapter(out_dir, tensors, config.adapter, {**(card or {}), **report}, __version__)
    return report


def example_questions(paths: Sequence[Path]) -> set[str]:
    """The questions of ``longscan synth`` example files (whole or packed lines alike).

    Raises:
        ValueError: a line that is not a JSON object with a question.
    """
    questions = set()
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    questions.add(str(json.loads(line)["question"]))
                except (ValueError, KeyError, TypeError) as error:
                    raise ValueError(f"{path}:{number}: not a synth example ({error})") from None
    return questions


def synthetic_kept(pairs: Sequence[Pair], questions: set[str]) -> list[Pair]:
    """``pairs`` but those of synthetic questions not in ``questions``: the pairs mined from
    every written question, narrowed to those a filter kept (``synth-agree``)."""
    return [p for p in pairs if not p.source.startswith(SYNTHETIC_SOURCE) or p.query in questions]


def run_encoder_training(
    out_dir: Path,
    pairs_path: Path,
    config: EncoderTrainConfig = EncoderTrainConfig(),
    progress: bool = True,
    synthetic_from: Sequence[Path] = (),
) -> dict[str, Any]:
    """Everything ``longscan train-encoder`` does: read the pairs ``train-reranker`` mined
    (with ``synthetic_from``, only the synthetic questions of those example files), make
    triplets, fine-tune, save. Returns the report.

    Raises:
        FileNotFoundError: no pairs file (``longscan train-reranker --pairs-cache`` writes it).
        ValueError: an example file that is not one.
    """
    from longscan.training.reranker import load_pairs, pair_counts

    if not pairs_path.is_file():
        raise FileNotFoundError(
            f"{pairs_path}: no mined pairs; write them with "
            "`longscan train-reranker --out DIR --pairs-cache PAIRS.jsonl`"
        )
    started = time.perf_counter()
    pairs = load_pairs(pairs_path)
    data: dict[str, Any] = {"pairs_file": pairs_path.name}
    if synthetic_from:
        data["synthetic_from"] = [path.name for path in synthetic_from]
        data["pairs_mined"] = len(pairs)
        pairs = synthetic_kept(pairs, example_questions(synthetic_from))
    triplets = encoder_triplets(pairs, config.seed)
    card = {"data": {**data, "pairs": pair_counts(pairs)}}
    report = train_encoder(triplets, out_dir, config, card, progress)
    report["seconds_total"] = round(time.perf_counter() - started, 1)
    return report


__all__ = [
    "EncoderTrainConfig",
    "Triplet",
    "encoder_triplets",
    "example_questions",
    "run_encoder_training",
    "sentence_of",
    "synthetic_kept",
    "train_encoder",
]
