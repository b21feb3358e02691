"""Training examples for the extractive reader, built from the training split's documents,
its fine-tuning, and its scores on the development sets.

An example reads as the reader reads at query time: the question, then evidence sentences
joined by ``EVIDENCE_SEPARATOR`` in document order: the gold sentences among distractor
sentences of the same document (its neighbours and look-alikes), 100 to 250 words in all.
The label is the first whole-word, case-insensitive occurrence of an answer in a gold
sentence. Some examples hold the document's other sentences only, labelled "no answer", so
the reader learns to decline evidence that does not answer. HotpotQA's yes/no answers are
never spans of the text; their questions are left out.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from longscan.answering.extractive import (
    HEAD,
    ExtractiveReader,
    Span,
    WindowTokenizer,
    base_reader_model,
    join_evidence,
)
from longscan.bench.builders import build_multihop, build_squad_long
from longscan.documents import Document, Evidence
from longscan.encoders.adapter import AdapterConfig, adapter_tensors, save_adapter
from longscan.evaluation.answers import exact_match, token_f1
from longscan.evaluation.gold import gold_unit_labels
from longscan.items import QAItem
from longscan.progress import track
from longscan.training.finetune import add_lora, dataset_class, logged_losses, recipe_card
from longscan.training.reranker import OWN_PARAGRAPHS_ONLY, TRAINING_SPLIT, training_sources

NOT_SPANS = frozenset({"yes", "no"})  # HotpotQA's comparison answers: never in the text
NO_ANSWER = -1  # an example's answer offsets when its context holds no answer


@dataclass(frozen=True)
class ReaderExample:
    """A question, the evidence context it is read with, and the answer's characters in
    that context (``NO_ANSWER`` twice when the context holds none)."""

    question: str
    context: str
    answer_start: int
    answer_end: int
    source: str


@dataclass(frozen=True)
class ExampleConfig:
    """How contexts are drawn around the gold sentences."""

    min_words: int = 100
    max_words: int = 250
    neighbour_share: float = 0.5  # chance that each neighbour of a gold sentence joins it
    no_answer_share: float = 0.2  # chance that an item also gives a context without answer


def find_answer(text: str, answers: Iterable[str]) -> tuple[int, int] | None:
    """The characters of the first answer (in the order given) found in ``text`` as whole
    words, ignoring case, at its first occurrence; None when none is."""
    for answer in answers:
        answer = answer.strip()
        if not answer or answer.lower() in NOT_SPANS:
            continue
        found = re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text, re.IGNORECASE)
        if found:
            return found.span()
    return None


def _context(texts: list[str], chosen: Iterable[int]) -> tuple[str, dict[int, int]]:
    """The sentences ``chosen`` joined in document order, and where each starts in it."""
    order = sorted(chosen)
    context, starts = join_evidence([texts[i] for i in order])
    return context, dict(zip(order, starts.tolist(), strict=True))


def _fill(
    chosen: set[int], candidates: list[int], words: list[int], target: int, rng: random.Random
) -> set[int]:
    """``chosen`` with ``candidates`` (random order) added until ``target`` words."""
    pool = list(candidates)
    rng.shuffle(pool)
    total = sum(words[i] for i in chosen)
    for index in pool:
        if total >= target:
            break
        chosen.add(index)
        total += words[index]
    return chosen


def document_examples(
    question: str,
    answers: Sequence[str],
    document: Document,
    gold: set[int],
    source: str,
    rng: random.Random,
    config: ExampleConfig = ExampleConfig(),
) -> list[ReaderExample]:
    """The examples of one question over one document with gold sentences ``gold``: the
    answered context (when an answer is found in a gold sentence) and, at random, one
    without any answer."""
    texts = document.sentence_texts()
    words = [len(text.split()) for text in texts]
    others = [i for i in range(len(texts)) if i not in gold]
    neighbours = {j for i in gold for j in (i - 1, i + 1) if j in set(others)}
    chosen = set(gold) | {j for j in sorted(neighbours) if rng.random() < config.neighbour_share}
    target = rng.randint(config.min_words, config.max_words)
    context, starts = _context(texts, _fill(chosen, others, words, target, rng))
    examples = []
    for index in sorted(gold):
        found = find_answer(texts[index], answers)
        if found is not None:
            start, end = (starts[index] + offset for offset in found)
            examples.append(ReaderExample(question, context, start, end, source))
            break
    if examples and rng.random() < config.no_answer_share:
        clean = [i for i in others if find_answer(texts[i], answers) is None]
        empty, _ = _context(texts, _fill(set(), clean, words, target, rng))
        if empty:
            examples.append(ReaderExample(question, empty, NO_ANSWER, NO_ANSWER, source))
    return examples


def item_examples(
    item: QAItem, source: str, rng: random.Random, config: ExampleConfig = ExampleConfig()
) -> list[ReaderExample]:
    """The examples of a dataset item over each of its documents holding gold sentences."""
    labels = gold_unit_labels(item)
    examples = []
    for document in item.documents:
        gold = set(np.flatnonzero(labels[document.id]).tolist())
        if gold:
            examples += document_examples(
                item.query, item.answers, document, gold, source, rng, config
            )
    return examples


def example_counts(examples: Iterable[ReaderExample]) -> dict[str, int]:
    """Examples by ``source/answered`` or ``source/no-answer`` (sorted), for the model card."""
    kinds = Counter(
        f"{e.source}/{'no-answer' if e.answer_start == NO_ANSWER else 'answered'}" for e in examples
    )
    return dict(sorted(kinds.items()))


def training_examples(
    max_per_source: dict[str, int | None],
    seed: int = 0,
    data_dir: str | None = None,
    config: ExampleConfig = ExampleConfig(),
    progress: bool = True,
) -> list[ReaderExample]:
    """The examples of the training split's items (``reranker.training_sources``: the
    re-scorer's documents, decontaminated against every evaluation document the same way);
    each source draws from a generator of its own."""
    from longscan.training.decontamination import evaluation_fingerprints

    fingerprints = evaluation_fingerprints(data_dir)
    examples = []
    for name, items in training_sources(max_per_source, seed, data_dir, fingerprints):
        rng = random.Random(f"{seed}/{name}")
        for item in track(items, f"{name} reader examples", enabled=progress):
            examples += item_examples(item, name, rng, config)
    return examples


def example_windows(
    examples: Sequence[ReaderExample], tokenizer: WindowTokenizer, progress: bool = True
) -> list[dict[str, list[int] | int]]:
    """Every window of every example as a training row: its pieces and the answer's first
    and last piece (``[CLS]``, 0, when the window does not hold the answer whole)."""
    rows = []
    for example in track(examples, "reader windows", enabled=progress):
        windows = tokenizer.windows(tokenizer.fit_question(example.question), example.context)
        for row in range(len(windows.input_ids)):
            first, last = (
                windows.answer_pieces(row, example.answer_start, example.answer_end)
                if example.answer_start != NO_ANSWER
                else (0, 0)
            )
            length = int(windows.attention_mask[row].sum())
            rows.append(
                {
                    **{k: v[row, :length].tolist() for k, v in windows.feeds().items()},
                    "start_positions": first,
                    "end_positions": last,
                }
            )
    return rows


def pad_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A batch of training rows as tensors, padded to its longest window."""
    import torch

    width = max(len(row["input_ids"]) for row in rows)
    batch = {
        key: torch.tensor([row[key] + [0] * (width - len(row[key])) for row in rows])
        for key in ("input_ids", "attention_mask", "token_type_ids")
    }
    for key in ("start_positions", "end_positions"):
        batch[key] = torch.tensor([row[key] for row in rows])
    return batch


@dataclass(frozen=True)
class ReaderTrainConfig:
    """The fine-tuning recipe (the model card records it)."""

    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 4e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    seed: int = 0
    # windows trained on, drawn at random from all: what fits a time budget
    max_windows: int | None = None
    adapter: AdapterConfig = field(
        default_factory=lambda: AdapterConfig(max_length=256, headings=False)
    )


PROBE_WINDOWS = 256  # windows whose loss is measured before and after training


def _window_loss(model: Any, rows: Sequence[dict[str, Any]]) -> float:
    """The mean start/end cross-entropy over ``rows``, without dropout."""
    import torch

    model.eval()
    losses = []
    with torch.inference_mode():
        for first in range(0, len(rows), 32):
            batch = rows[first : first + 32]
            losses.append(float(model(**pad_rows(batch)).loss) * len(batch))
    model.train()
    return sum(losses) / len(rows)


def train_reader(
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    config: ReaderTrainConfig = ReaderTrainConfig(),
    card: dict[str, Any] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune a LoRA adapter and a fresh span head over the packaged MiniLM on the
    training windows ``rows`` (cross-entropy of the answer's first and last piece) and save
    them to ``out_dir``. Returns the training report (losses, steps, seconds)."""
    import tempfile

    import torch
    from transformers import Trainer, TrainingArguments

    from longscan import __version__
    from longscan.devices import device_name, torch_device
    from longscan.training.finetune import trainer_arguments

    if not rows:
        raise ValueError("no training windows")
    device = torch_device()
    torch.manual_seed(config.seed)
    model = base_reader_model().to(device)
    add_lora(model, config.adapter, modules_to_save=[HEAD])
    probe = list(rows[:: max(1, len(rows) // PROBE_WINDOWS)][:PROBE_WINDOWS])
    initial = _window_loss(model, probe)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="longscan-reader-") as scratch:
        args = trainer_arguments(
            TrainingArguments,
            scratch,
            config,
            len(rows),
            progress,
            device,
            weight_decay=config.weight_decay,
        )
        data = dataset_class().from_list(list(rows))
        trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=pad_rows)
        result = trainer.train()
    report = {
        "initial_loss": round(initial, 4),
        "final_loss": round(_window_loss(model, probe), 4),
        "windows": len(rows),
        "answered_windows": sum(row["start_positions"] > 0 for row in rows),
        "steps": int(result.global_step),
        "seconds": round(time.perf_counter() - started, 1),
        "device": device_name(device),
        "losses": logged_losses(trainer),
        "recipe": recipe_card(config, "cross-entropy of the answer's first and last piece"),
    }
    card = {**(card or {}), **report}
    save_adapter(out_dir, adapter_tensors(model), config.adapter, card, __version__)
    return report


# ------------------------------------------------------------------------ development sets

DEV_QUESTIONS: dict[str, int | None] = {"squad": 200, "hotpotqa": 100, "musique": None}
SQUAD_DEV_WORDS = 5_000  # documents of whole dev articles; a question reads its own part


@dataclass(frozen=True)
class DevQuestion:
    """A development question, the evidence it is read with and its reference answers."""

    question: str
    evidence: list[Evidence]
    answers: list[str]


def _evidence(document: Document, indices: Iterable[int]) -> list[Evidence]:
    spans = document.sentences
    return [
        Evidence.of(document, int(spans[i, 0]), int(spans[i, 1]), 0.0, i) for i in sorted(indices)
    ]


def development_questions(
    limits: dict[str, int | None] = DEV_QUESTIONS, seed: int = 0, data_dir: str | None = None
) -> dict[str, list[DevQuestion]]:
    """The development sets, each question with its gold sentences as evidence: SQuAD's
    answer sentence with its neighbours, HotpotQA's supporting sentences and the sentences
    of MuSiQue's supporting paragraphs (the dev builders' gold); and ``squad-no-answer``:
    the SQuAD questions over three other sentences of the same articles, none holding an
    answer, where the reader should decline."""
    sets: dict[str, list[DevQuestion]] = {}
    for name, limit in limits.items():
        if name == "squad":
            items = build_squad_long(
                "dev", SQUAD_DEV_WORDS, max_items=limit, seed=seed, data_dir=data_dir
            )
        else:
            items = build_multihop(
                name, "dev", OWN_PARAGRAPHS_ONLY, max_items=limit, seed=seed, data_dir=data_dir
            )
        sets[name] = []
        for item in items:
            labels = gold_unit_labels(item)
            document = item.documents[0]
            gold = set(np.flatnonzero(labels[document.id]).tolist())
            if name == "squad":
                gold |= {
                    j for i in gold for j in (i - 1, i + 1) if 0 <= j < len(labels[document.id])
                }
            sets[name].append(DevQuestion(item.query, _evidence(document, gold), item.answers))
        if name == "squad":
            sets["squad-no-answer"] = [
                _without_answer(item, random.Random(f"{seed}/{item.id}")) for item in items
            ]
    return sets


def _without_answer(item: QAItem, rng: random.Random) -> DevQuestion:
    """``item``'s question over three sentences of its document that hold no answer."""
    document = item.documents[0]
    gold = gold_unit_labels(item)[document.id]
    texts = document.sentence_texts()
    clean = [
        i
        for i, text in enumerate(texts)
        if not gold[i] and find_answer(text, item.answers) is None and len(text.split()) > 5
    ]
    return DevQuestion(item.query, _evidence(document, rng.sample(clean, 3)), item.answers)


def score_reader(
    read: Callable[[str, Sequence[Evidence]], Span | None], questions: Sequence[DevQuestion]
) -> dict[str, float]:
    """EM and token F1 (SQuAD normalisation) of ``read`` over ``questions`` (no answer
    scores 0), the same over the questions whose answer occurs in their evidence
    (``extractable``), the share it declines, and seconds per question."""
    em, f1, extractable, declined = [], [], [], 0
    started = time.perf_counter()
    for question in questions:
        span = read(question.question, question.evidence)
        declined += span is None
        predicted = "" if span is None else span.text
        em.append(exact_match(predicted, question.answers))
        f1.append(token_f1(predicted, question.answers))
        joined = " ".join(item.text for item in question.evidence)
        extractable.append(find_answer(joined, question.answers) is not None)
    seconds = time.perf_counter() - started
    held = np.array(extractable, dtype=bool)
    em_array, f1_array = np.array(em), np.array(f1)
    return {
        "questions": len(questions),
        "extractable": int(held.sum()),
        "em": float(em_array.mean()) if len(em) else 0.0,
        "f1": float(f1_array.mean()) if len(f1) else 0.0,
        "em_extractable": float(em_array[held].mean()) if held.any() else 0.0,
        "f1_extractable": float(f1_array[held].mean()) if held.any() else 0.0,
        "declined": declined / max(1, len(questions)),
        "seconds_per_question": seconds / max(1, len(questions)),
    }


def development_scores(
    reader: ExtractiveReader, seed: int = 0, data_dir: str | None = None
) -> dict[str, dict[str, float]]:
    """``score_reader`` of ``reader`` over every development set."""
    sets = development_questions(seed=seed, data_dir=data_dir)
    return {name: score_reader(reader.read, questions) for name, questions in sets.items()}


def score_table(scores: dict[str, dict[str, float]]) -> str:
    """The development scores as a Markdown table (model card and benchmark)."""
    lines = [
        "| set | questions | answer in evidence | EM | F1 | EM (answer in evidence) "
        "| F1 (answer in evidence) | declined | s/question |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in scores.items():
        lines.append(
            f"| {name} | {row['questions']} | {row['extractable']} | {row['em']:.3f} | "
            f"{row['f1']:.3f} | {row['em_extractable']:.3f} | {row['f1_extractable']:.3f} | "
            f"{row['declined']:.2f} | {row['seconds_per_question']:.3f} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------ the whole command


def write_model_card(directory: Path, card: dict[str, Any], adapter: AdapterConfig) -> None:
    """MODEL_CARD.md from the training report: command, seed, data, steps, time, dev scores."""
    recipe, data = card["recipe"], card["data"]
    options = [f"--{name} {limit}" for name, limit in data["max_per_source"].items() if limit]
    options += [f"--seed {recipe['seed']}", f"--epochs {recipe['epochs']:g}"]
    options += [f"--lr {recipe['learning_rate']:g}", f"--batch-size {recipe['batch_size']}"]
    if recipe["max_windows"] is not None:
        options.append(f"--max-windows {recipe['max_windows']}")
    command = " \\\n    ".join(["longscan train-reader --out DIR", *options])
    rows = "\n".join(f"| {key} | {count:,} |" for key, count in data["examples"].items())
    text = f"""# longscan extractive reader (LoRA over all-MiniLM-L6-v2)

A LoRA adapter (rank {adapter.rank}, alpha {adapter.alpha}, on MiniLM's
{", ".join(adapter.target_modules)} layers) and a fresh span head (`{HEAD}`: a start and an
end logit per word piece), read over the packaged all-MiniLM-L6-v2 as
`[CLS] question [SEP] evidence [SEP] evidence ... [SEP]` in windows of
{adapter.max_length} word pieces. `longscan.answering.extractive` runs it through ONNX
Runtime.

## Command and seed

```
{command}
```

Seed {recipe["seed"]} (example drawing, shuffling and the head's initialisation);
{card["steps"]} steps of batch {recipe["batch_size"]}, {recipe["epochs"]:g} epoch(s) over
{card["windows"]:,} windows ({card["answered_windows"]:,} holding their answer), learning
rate {recipe["learning_rate"]} (cosine, {recipe["warmup_ratio"]:.0%} warm-up), weight decay
{recipe["weight_decay"]}; loss: {recipe["loss"]}. Trained on {card["device"]} in
{card["seconds"]:,.0f} s ({card["seconds_total"]:,.0f} s with data and evaluation).

## Data

{data["split"]}. Per source: {data["max_per_source"]} questions (None: all).

Contexts: the gold sentences, each neighbour with chance {data["config"]["neighbour_share"]},
and random other sentences of the same document up to {data["config"]["min_words"]} to
{data["config"]["max_words"]} words, in document order; label: the first whole-word,
case-insensitive occurrence of an answer in a gold sentence (questions whose answers occur in
none, HotpotQA's yes/no among them, are left out). With chance
{data["config"]["no_answer_share"]}, a question also gets a context of the document's other
sentences holding no answer, labelled `[CLS]` (no answer).

| source/kind | examples |
|---|---:|
{rows}

## Loss

Objective over {min(PROBE_WINDOWS, card["windows"])} training windows (no dropout):
{card["initial_loss"]} before, {card["final_loss"]} after training.

## Development scores

Gold evidence given (SQuAD: the answer sentence and its neighbours; HotpotQA: the supporting
sentences; MuSiQue: the supporting paragraphs' sentences); `squad-no-answer`: the SQuAD
questions over three sentences without an answer (declining is right there). EM and F1 with
SQuAD normalisation; ONNX Runtime on {card["evaluation_threads"]} CPU threads
(`python benchmarks/reader.py`).

{score_table(card["development"])}
"""
    (directory / "MODEL_CARD.md").write_text(text, encoding="utf-8")


def run_reader_training(
    out_dir: Path,
    max_per_source: dict[str, int | None],
    config: ReaderTrainConfig = ReaderTrainConfig(),
    examples: ExampleConfig = ExampleConfig(),
    data_dir: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Everything ``longscan train-reader`` does: build examples, cut them into windows
    (``config.max_windows`` of them at most, drawn at random), fine-tune, save, and score
    the saved reader on the development sets (into its model card). Returns the report."""
    import json

    import torch

    from longscan.encoders.bert import default_threads

    started = time.perf_counter()
    built = training_examples(max_per_source, config.seed, data_dir, examples, progress)
    rows = example_windows(built, WindowTokenizer(config.adapter.max_length), progress)
    random.Random(config.seed).shuffle(rows)
    rows = rows[: config.max_windows]
    card = {
        "data": {
            "split": TRAINING_SPLIT,
            "max_per_source": max_per_source,
            "config": asdict(examples),
            "examples": example_counts(built),
        }
    }
    torch.manual_seed(config.seed)
    report = train_reader(rows, out_dir, config, card, progress)
    reader = ExtractiveReader(out_dir)
    report["development"] = development_scores(reader, config.seed, data_dir)
    report["evaluation_threads"] = default_threads()
    report["seconds_total"] = round(time.perf_counter() - started, 1)
    config_path = out_dir / "config.json"
    saved = json.loads(config_path.read_text(encoding="utf-8"))
    saved["training"].update({k: report[k] for k in ("development", "seconds_total")})
    config_path.write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
    write_model_card(out_dir, {**card, **report}, config.adapter)
    return report
