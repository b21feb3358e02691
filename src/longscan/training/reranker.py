"""Training pairs for the cross-encoder, mined from the training split's long documents, and
its fine-tuning with sentence-transformers' ``CrossEncoderTrainer``.

The negatives that matter are the look-alikes a first stage confuses with the evidence, in
the *same* long document: the best-ranked non-gold sentences under BM25 and under the dense
encoder, plus a few random sentences of the document so the model still sees easy text.

Multi-hop items also give second-round pairs: the question joined with one supporting
sentence (``join_hop``) against the supporting sentences of the *other* paragraphs, with
negatives mined for that joined query. Positives and negatives are read in context
(``sentence_in_context``), exactly as the re-ranker reads them at query time.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.bench.builders import build_multihop, build_squad_long
from longscan.documents import Document
from longscan.encoders.adapter import AdapterConfig, adapter_tensors, save_adapter
from longscan.encoders.minilm import SentenceEncoder
from longscan.evaluation.gold import gold_unit_labels
from longscan.items import QAItem
from longscan.lexical.bm25 import build_index, tokenize
from longscan.progress import track
from longscan.rerankers.cross_encoder import base_cross_encoder, join_hop, sentence_in_context
from longscan.training.data import SyntheticDrop, usable_synthetic
from longscan.training.decontamination import (
    DECONTAMINATION_THRESHOLD,
    CleanParagraphs,
    evaluation_fingerprints,
)
from longscan.training.finetune import (
    add_lora,
    dataset_class,
    load_start,
    logged_losses,
    recipe_card,
    trainer_arguments,
)

if TYPE_CHECKING:
    from longscan.training.synthetic_examples import SyntheticExample


SYNTHETIC_SOURCE = "synthetic/"  # a synth example's pairs: this, then its strategy


@dataclass
class Pair:
    """One training pair: ``label`` 1.0 when ``passage`` is evidence for ``query``."""

    query: str
    passage: str
    label: float
    kind: str  # "hop1" (the question) or "hop2" (the question joined with a first hop)
    source: str


@dataclass(frozen=True)
class MiningConfig:
    """How many negatives each query gets, by where they come from."""

    bm25_negatives: int = 3
    dense_negatives: int = 3
    random_negatives: int = 1
    second_hop: bool = True
    # dense negatives come from BM25's best ``dense_pool`` units when set: a synthetic
    # example's span holds ten times the sentences of a Wikipedia item, and encoding all of
    # them would take longer than the training
    dense_pool: int | None = None


class _VectorCache:
    """Sentence vectors by text: distractor paragraphs recur across training documents."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        self.encoder = encoder
        self.vectors: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            for text, vector in zip(missing, self.encoder.encode(missing), strict=True):
                self.vectors[text] = vector
        if not texts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


@dataclass
class _Miner:
    encoder: _VectorCache
    config: MiningConfig
    rng: random.Random

    def negatives(self, query: str, texts: list[str], index: Any, exclude: set[int]) -> list[int]:
        """Hard negatives (best non-gold under BM25, then dense) and random ones."""
        chosen: list[int] = []
        bm25 = np.asarray(index.get_scores(tokenize([query])[0]), dtype=np.float64)
        by_bm25 = np.argsort(-bm25, kind="stable")
        pool = by_bm25 if self.config.dense_pool is None else by_bm25[: self.config.dense_pool]
        pool = np.sort(pool)  # document order, so a tie ranks as over every unit
        dense = self.encoder([texts[i] for i in pool]) @ self.encoder([query])[0]
        for ranked, wanted in (
            (by_bm25.tolist(), self.config.bm25_negatives),
            (pool[np.argsort(-dense, kind="stable")].tolist(), self.config.dense_negatives),
        ):
            taken = 0
            for i in ranked:
                if taken == wanted:
                    break
                if i not in exclude and i not in chosen:
                    chosen.append(i)
                    taken += 1
        rest = [i for i in range(len(texts)) if i not in exclude and i not in chosen]
        chosen.extend(self.rng.sample(rest, min(self.config.random_negatives, len(rest))))
        return chosen

    def item_pairs(self, item: QAItem, source: str) -> list[Pair]:
        """Pairs of a dataset item over its one document, by its gold units."""
        (document,) = item.documents
        labels = gold_unit_labels(item)[document.id]
        return self.document_pairs(
            document, item.query, set(np.flatnonzero(labels).tolist()), source
        )

    def document_pairs(
        self, document: Document, query: str, gold: set[int], source: str, second_hop: bool = True
    ) -> list[Pair]:
        """First-round pairs of ``query`` over ``document`` and, when ``second_hop`` and the
        gold units sit in several paragraphs, the second round's."""
        if not gold:
            return []
        texts = document.sentence_texts()
        index = build_index(texts)
        pairs = self._pairs(document, query, gold, gold, texts, index, "hop1")
        if second_hop and self.config.second_hop:
            paragraph = document.sentence_paragraph
            groups: dict[int, list[int]] = {}
            for i in sorted(gold):
                groups.setdefault(int(paragraph[i]), []).append(i)
            if len(groups) > 1:
                for members in groups.values():
                    joined = join_hop(query, texts[members[0]])
                    targets = gold - set(members)
                    pairs += self._pairs(document, joined, targets, gold, texts, index)
        for pair in pairs:
            pair.source = source
        return pairs

    def _pairs(
        self,
        document: Document,
        query: str,
        positives: set[int],
        gold: set[int],
        texts: list[str],
        index: Any,
        kind: str = "hop2",
    ) -> list[Pair]:
        negatives = self.negatives(query, texts, index, gold)
        return [
            Pair(query, sentence_in_context(document, i), label, kind, "")
            for indices, label in ((sorted(positives), 1.0), (negatives, 0.0))
            for i in indices
        ]


def pair_counts(pairs: Iterable[Pair]) -> dict[str, int]:
    """Pairs by ``source/kind/label`` (sorted), for the model card."""
    return dict(sorted(Counter(f"{p.source}/{p.kind}/{int(p.label)}" for p in pairs).items()))


def mine_pairs(
    sources: Iterable[tuple[str, Sequence[QAItem]]],
    encoder: SentenceEncoder,
    config: MiningConfig = MiningConfig(),
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[Pair], dict[str, int]]:
    """Pairs of every item of every ``(source name, items)``, and their counts by
    source/kind/label (for the model card). Each source draws its random negatives from a
    generator of its own, so adding questions to one source leaves the others' pairs as
    they were."""
    miner = _Miner(_VectorCache(encoder), config, random.Random(seed))
    pairs: list[Pair] = []
    for name, items in sources:
        miner.rng = random.Random(f"{seed}/{name}")
        for item in track(items, f"mining {name} pairs", enabled=progress):
            pairs.extend(miner.item_pairs(item, name))
    return pairs, pair_counts(pairs)


SYNTHETIC_DENSE_POOL = 20  # BM25's best units a synthetic example's dense negatives come from


def mine_synthetic_pairs(
    examples: Sequence[SyntheticExample],
    encoder: SentenceEncoder,
    config: MiningConfig = MiningConfig(),
    seed: int = 0,
    fingerprints: set[bytes] | None = None,
    threshold: float = DECONTAMINATION_THRESHOLD,
    progress: bool = True,
) -> tuple[list[Pair], dict[str, int]]:
    """First-round pairs of ``longscan synth`` examples over their own spans, labelled as the
    scanner's training labels them (``synthetic_labels``: a bullet or page number is no
    positive), and the examples dropped by reason. An example sharing more than ``threshold`` of
    its sentences with evaluation text (``fingerprints``) is dropped, as in the scanner's data.
    No second round: a chunk example's labelled lines are one passage, not two hops."""
    mining = replace(config, dense_pool=config.dense_pool or SYNTHETIC_DENSE_POOL)
    miner = _Miner(_VectorCache(encoder), mining, random.Random(f"{seed}/synthetic"))
    pairs: list[Pair] = []
    dropped = {"without_content": 0, "contaminated": 0}

    def count(_: SyntheticExample, reason: SyntheticDrop) -> None:
        dropped[reason] += 1

    read = track(examples, "mining synthetic pairs", enabled=progress)
    for example, document, labels in usable_synthetic(read, fingerprints, threshold, count):
        gold = set(np.flatnonzero(labels).tolist())
        source = SYNTHETIC_SOURCE + example.strategy
        pairs += miner.document_pairs(document, example.question, gold, source, False)
    return pairs, dropped


SOURCES = ("squad", "hotpotqa", "musique")  # the datasets whose train splits give pairs
OWN_PARAGRAPHS_ONLY = 1  # a target below a question's own paragraphs adds no foreign ones


def training_sources(
    max_per_source: dict[str, int | None],
    seed: int = 0,
    data_dir: str | None = None,
    fingerprints: set[bytes] | None = None,
) -> list[tuple[str, list[QAItem]]]:
    """The training split's documents per source: SQuAD articles joined to 5k words (the
    other paragraphs of an article are its look-alikes), HotpotQA (train sample + the 991
    extra questions) and MuSiQue with sentence-level gold, each with its own paragraphs only:
    the datasets chose those distractors to resemble the gold ones, the hardest negatives a
    question has, and encoding them alone keeps mining within minutes here. Paragraphs
    sharing a sentence with evaluation data (``fingerprints``) are never drawn."""
    keep = CleanParagraphs(fingerprints) if fingerprints is not None else None
    sources: list[tuple[str, list[QAItem]]] = []
    for name, limit in max_per_source.items():
        if name == "squad":
            items = build_squad_long("train", 5_000, max_items=limit, seed=seed, data_dir=data_dir)
        elif name in ("hotpotqa", "musique"):
            items = build_multihop(
                name,
                "train",
                OWN_PARAGRAPHS_ONLY,
                max_items=limit,
                seed=seed,
                data_dir=data_dir,
                keep=keep,
                sentence_support=name == "musique",
            )
        else:
            raise ValueError(f"unknown training source {name!r}; use {', '.join(SOURCES)}")
        sources.append((name, items))
    return sources


def save_pairs(pairs: Sequence[Pair], path: Path) -> None:
    """One JSON object per line, so a retraining reads mined pairs instead of mining again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")


def load_pairs(path: Path) -> list[Pair]:
    with path.open(encoding="utf-8") as handle:
        return [Pair(**json.loads(line)) for line in handle if line.strip()]


@dataclass(frozen=True)
class TrainConfig:
    """The fine-tuning recipe (the model card records it)."""

    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 3e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    seed: int = 0
    adapter: AdapterConfig = AdapterConfig()
    # an adapter folder to start from (its updates and head) instead of a fresh one: the
    # shipped re-scorer trained further on new data
    init_from: str | None = None


PROBE_PAIRS = 512  # pairs whose loss is measured before and after training
# A run whose probe loss ends above this share of where it began did not learn: one seed of
# five of the shipped recipe stayed at 1.099 → 1.091 (docs/experiments.md).
STALLED_SHARE = 0.9


def stalled(report: dict[str, Any]) -> bool:
    """Whether a training run's probe loss barely fell: its adapter scores near chance, and
    another seed should be trained instead of shipping it."""
    return report["final_loss"] > STALLED_SHARE * report["initial_loss"]


def _pair_loss(model: Any, pairs: Sequence[Pair], pos_weight: Any) -> float:
    """The training objective over ``pairs``, measured without dropout."""
    import torch

    logits = model.predict(
        [(p.query, p.passage) for p in pairs],
        batch_size=64,
        activation_fn=torch.nn.Identity(),
        convert_to_tensor=True,
        show_progress_bar=False,
    )
    labels = torch.tensor([p.label for p in pairs], dtype=logits.dtype, device=logits.device)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        logits.reshape(-1), labels, pos_weight=pos_weight.to(logits)
    )
    return float(loss)


def train_reranker(
    pairs: Sequence[Pair],
    out_dir: Path,
    config: TrainConfig = TrainConfig(),
    card: dict[str, Any] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune a LoRA adapter and a fresh head over the packaged MiniLM on ``pairs``
    (binary cross-entropy, positives weighted by #neg/#pos as in the scanner's loss) and save
    them to ``out_dir``. Returns the training report (losses, steps, seconds)."""
    import tempfile
    import time

    import torch
    from sentence_transformers.cross_encoder import (
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    from longscan import __version__
    from longscan.devices import device_name, torch_device

    if not pairs:
        raise ValueError("no training pairs")
    dataset = dataset_class()
    device = torch_device()
    torch.manual_seed(config.seed)
    model = base_cross_encoder(config.adapter.max_length, device)
    add_lora(model, config.adapter, modules_to_save=["classifier"], task_type="SEQ_CLS")
    started_from = None
    if config.init_from is not None:
        started_from = load_start(
            model[0].model, config.init_from, config.adapter, "longscan train-reranker"
        )
    positives = sum(p.label for p in pairs)
    pos_weight = torch.tensor((len(pairs) - positives) / max(positives, 1.0), device=device)
    loss = BinaryCrossEntropyLoss(model, pos_weight=pos_weight)
    data = dataset.from_dict(
        {
            "query": [p.query for p in pairs],
            "passage": [p.passage for p in pairs],
            "label": [p.label for p in pairs],
        }
    )
    probe = pairs[:: max(1, len(pairs) // PROBE_PAIRS)][:PROBE_PAIRS]
    initial = _pair_loss(model, probe, pos_weight)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="longscan-ce-") as scratch:
        args = trainer_arguments(
            CrossEncoderTrainingArguments,
            scratch,
            config,
            len(pairs),
            progress,
            device,
            weight_decay=config.weight_decay,
        )
        trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=loss)
        result = trainer.train()
    report = {
        "initial_loss": round(initial, 4),
        "final_loss": round(_pair_loss(model, probe, pos_weight), 4),
        "pairs": len(pairs),
        "positives": int(positives),
        "steps": int(result.global_step),
        "seconds": round(time.perf_counter() - started, 1),
        "device": device_name(device),
        "losses": logged_losses(trainer),
        "recipe": recipe_card(config, "BinaryCrossEntropyLoss, pos_weight = #neg / #pos"),
        "init_from_sha256": started_from,
    }
    tensors = adapter_tensors(model[0].model)
    card = {**(card or {}), **report}
    save_adapter(out_dir, tensors, config.adapter, card, __version__)
    write_model_card(out_dir, card, config.adapter)
    return report


def write_model_card(directory: Path, card: dict[str, Any], adapter: AdapterConfig) -> None:
    """MODEL_CARD.md from the training report: data, negatives, seed, recipe, losses."""
    data = card.get("data", {})
    counts = data.get("pairs_by_source_kind_label", {})
    rows = "\n".join(f"| {key} | {count:,} |" for key, count in counts.items())
    recipe = card["recipe"]
    heading = "the heading above it, " if adapter.headings else ""
    limits = data.get("max_per_source", {})
    options = [f"--{name} 0" for name in SOURCES if name not in limits]
    options += [f"--{name} {limit}" for name, limit in limits.items() if limit is not None]
    options += [f"--synthetic {path}" for path in data.get("synthetic", [])]
    head = "a fresh one-logit head"
    if recipe.get("init_from"):
        options.append(f"--init-from {recipe['init_from']}")
        head = f"a one-logit head, both trained on from `{recipe['init_from']}` (SHA-256 "
        head += f"{card['init_from_sha256']})"
    options += [f"--seed {recipe['seed']}", f"--epochs {recipe['epochs']:g}"]
    options += [f"--lr {recipe['learning_rate']:g}"]
    command = " \\\n    ".join(
        ["longscan train-reranker --out DIR --pairs-cache PAIRS.jsonl", *options]
    )
    dropped = data.get("synthetic_dropped")
    unrecorded = (
        "Pairs read from a cache that kept no record of how they were mined: the sources "
        "named here are those asked for.\n\n"
        if data.get("recorded") is False
        else ""
    )
    synthetic = (
        f"Synthetic examples ({', '.join(data['synthetic'])}): first-round pairs over each "
        "example's own span, its labelled lines that say something as positives, dense "
        f"negatives from BM25's best {SYNTHETIC_DENSE_POOL}; examples dropped: {dropped}.\n\n"
        if data.get("synthetic")
        else ""
    )
    text = f"""# longscan cross-encoder re-scorer (LoRA over all-MiniLM-L6-v2)

A LoRA adapter (rank {adapter.rank}, alpha {adapter.alpha}, on MiniLM's
{", ".join(adapter.target_modules)} layers) and {head}, read over the packaged
all-MiniLM-L6-v2 as a cross-encoder: `(question, sentence [SEP] {heading}paragraph lead and
previous sentence)`, {adapter.max_length} word pieces. Second-round queries are the question
joined with a first-hop sentence (`question [SEP] sentence`).

## Command and seed

```
{command}
```

Seed {recipe["seed"]} (mining, shuffling and the head's initialisation); {card["steps"]} steps of
batch {recipe["batch_size"]}, {recipe["epochs"]} epoch(s), learning rate {recipe["learning_rate"]}
(cosine, {recipe["warmup_ratio"]:.0%} warm-up), weight decay {recipe["weight_decay"]};
loss: {recipe["loss"]}. Trained on {card.get("device", "CPU")} in {card["seconds"]:,.0f} s.

## Data

{data.get("split", "")}. Per source: {data.get("max_per_source", {})} questions
(None: all).

{unrecorded}{synthetic}Negatives per query: {card.get("negatives", {})} (BM25 and dense: the
best-ranked non-gold sentences of the question's own document; random: any other sentence of
it). Second-hop pairs: for each paragraph holding supporting sentences, the question joined
with its first supporting sentence, against the other paragraphs' supporting sentences and
negatives mined for that joined query.

| source/round/label | pairs |
|---|---:|
{rows}

## Loss

Objective over {min(PROBE_PAIRS, card["pairs"])} training pairs (no dropout): {card["initial_loss"]}
before, {card["final_loss"]} after training.
"""
    (directory / "MODEL_CARD.md").write_text(text, encoding="utf-8")


TRAINING_SPLIT = (
    "train (SQuAD articles and MuSiQue questions by hash, HotpotQA train sample + the 991 extra "
    "questions); paragraphs sharing a sentence with any evaluation document dropped"
)


def training_pairs(
    max_per_source: dict[str, int | None],
    mining: MiningConfig = MiningConfig(),
    seed: int = 0,
    pairs_cache: Path | None = None,
    data_dir: str | None = None,
    progress: bool = True,
    synthetic: Sequence[Path] = (),
) -> tuple[list[Pair], dict[str, Any]]:
    """The training split's mined pairs and those of the ``synthetic`` example files (read
    from ``pairs_cache`` if present, else mined from documents decontaminated against every
    evaluation document and written there, with a record of what was mined beside it), and
    the model card's data section.

    Raises:
        ValueError: ``pairs_cache`` records other sources or files than those asked for.
    """
    from longscan.encoders.minilm import get_encoder
    from longscan.training.synthetic_examples import read_training_examples

    mined = {
        "max_per_source": max_per_source,
        "synthetic": [str(path) for path in synthetic],
        "synthetic_dropped": None,
        "seed": seed,
        "negatives": asdict(mining),
    }
    asked = {k: v for k, v in mined.items() if k != "synthetic_dropped"}
    if pairs_cache is not None and pairs_cache.is_file():
        pairs = load_pairs(pairs_cache)
        record = _mined_record(pairs_cache)
        if record is None:  # a cache written before records were kept
            mined = {**mined, "recorded": False}
        elif {k: record.get(k) for k in asked} != asked:
            raise ValueError(
                f"{pairs_cache} holds pairs mined as {record}, not as asked ({asked}): "
                "name another --pairs-cache"
            )
        else:
            mined = record
    else:
        fingerprints = evaluation_fingerprints(data_dir)
        sources = training_sources(max_per_source, seed, data_dir, fingerprints)
        encoder = get_encoder()
        pairs, _ = mine_pairs(sources, encoder, mining, seed, progress)
        if synthetic:
            examples = [e for path in synthetic for e in read_training_examples(path)]
            more, mined["synthetic_dropped"] = mine_synthetic_pairs(
                examples, encoder, mining, seed, fingerprints, progress=progress
            )
            pairs += more
        if pairs_cache is not None:
            save_pairs(pairs, pairs_cache)
            _mined_record_path(pairs_cache).write_text(json.dumps(mined), encoding="utf-8")
    card = {
        "data": {
            "split": TRAINING_SPLIT,
            **{k: v for k, v in mined.items() if k not in ("seed", "negatives")},
            "pairs_by_source_kind_label": pair_counts(pairs),
        },
        "negatives": asdict(mining),
    }
    return pairs, card


def _mined_record_path(pairs_cache: Path) -> Path:
    return pairs_cache.with_name(pairs_cache.name + ".mined.json")


def _mined_record(pairs_cache: Path) -> dict[str, Any] | None:
    """How the pairs in ``pairs_cache`` were mined, if that was recorded."""
    path = _mined_record_path(pairs_cache)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def run_reranker_training(
    out_dir: Path,
    max_per_source: dict[str, int | None],
    mining: MiningConfig = MiningConfig(),
    config: TrainConfig = TrainConfig(),
    pairs_cache: Path | None = None,
    data_dir: str | None = None,
    progress: bool = True,
    synthetic: Sequence[Path] = (),
) -> dict[str, Any]:
    """Everything ``longscan train-reranker`` does: mine pairs (or read them from
    ``pairs_cache``, written on first use), fine-tune, save. Returns the report."""
    import time

    import torch

    started = time.perf_counter()
    torch.manual_seed(config.seed)
    pairs, card = training_pairs(
        max_per_source, mining, config.seed, pairs_cache, data_dir, progress, synthetic
    )
    report = train_reranker(pairs, out_dir, config, card, progress)
    report["seconds_total"] = round(time.perf_counter() - started, 1)
    return report
