"""``longscan train`` end to end: data → decontamination → training → checkpoint + card."""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from longscan import __version__
from longscan.bench.builders import split_of
from longscan.encoders.adapter import WEIGHTS_FILE
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.encoders.minilm import cache_name, get_encoder
from longscan.files import file_sha256
from longscan.models.scanner import ScannerEnsemble
from longscan.scanning import features as features_module
from longscan.scanning.checkpoint import save_checkpoint
from longscan.scanning.features import FEATURE_NAMES
from longscan.tables import rules_digest
from longscan.training import data as data_module
from longscan.training import decontamination as decontamination_module
from longscan.training import instructions as instructions_module
from longscan.training import named as named_module
from longscan.training import spscanner
from longscan.training.args import TrainingArgs
from longscan.training.card import model_card
from longscan.training.data import (
    TrainingSet,
    build_training_set,
    concatenate,
    synthetic_training_set,
)
from longscan.training.decontamination import evaluation_fingerprints
from longscan.training.options import TrainOptions
from longscan.training.synthetic_examples import (
    SyntheticExample,
    begin_some_at_evidence,
    read_training_examples,
)
from longscan.training.trainer import train

DEV_EXAMPLES_PER_SOURCE = 30
SYNTHETIC_DEV_FRACTION = 0.1


def _reading(args: TrainingArgs) -> tuple[Any, ...]:
    """What every part of the data depends on: the vectors, the columns and the labels."""
    parts = (
        cache_name(args.encoder),  # int8 vectors: read row by row, under their scheme
        args.context_tokens,
        args.table_context,
        FEATURE_NAMES,  # the cached data holds every feature column,
        _file_digest(Path(features_module.__file__)),  # computed by this code
        _file_digest(Path(data_module.__file__)),  # labelled by this code
        _file_digest(Path(decontamination_module.__file__)),  # and decontaminated by this one
        __version__,
    )
    if args.encoder_adapter is not None:
        parts += (file_sha256(Path(args.encoder_adapter) / WEIGHTS_FILE),)
    if args.table_context:  # rows read the context that these rules find
        parts += (rules_digest(),)
    return parts


def _datasets_key(args: TrainingArgs) -> str:
    """The datasets' examples depend on these arguments only, so a run with another
    synthetic mix reads them from the cache."""
    parts = (
        _reading(args),
        args.datasets,
        args.lengths_words,
        args.seeds,
        args.max_per_source,
        args.decontamination_threshold,
        DEV_EXAMPLES_PER_SOURCE,
        args.sentence_labels,
    )
    if args.instruction_copies:  # copies whose queries this code writes
        parts += (args.instruction_copies, _file_digest(Path(instructions_module.__file__)))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _data_key(args: TrainingArgs) -> str:
    """The whole data (the synthetic part's key) depends on these arguments only, not on the
    model or the optimiser."""
    parts: tuple[Any, ...] = (
        _datasets_key(args),
        tuple(_file_digest(Path(path)) for path in args.synthetic),
        args.evidence_first,
        SYNTHETIC_DEV_FRACTION,
    )
    if args.row_context_negative:  # other labels for the same examples
        parts += ("row_context_negative",)
    if args.named_synthetic:  # copies whose questions this code names
        named_files = tuple(_file_digest(Path(path)) for path in args.named_synthetic)
        parts += (named_files, _file_digest(Path(named_module.__file__)), args.named_among)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    return file_sha256(path)[:16]


def _cached(folder: Path | None, build: Callable[[], TrainingSet]) -> TrainingSet:
    """``build()``, saved in ``folder`` and read from there by later runs (``data.json``,
    written last, says the set is whole)."""
    if folder is not None and (folder / "data.json").is_file():
        return TrainingSet.load(folder)
    data = build()
    if folder is not None:
        data.save(folder)
    return data


class _DataBuilder:
    """The parts of ``build_data``, each built only when its cache lacks it: the encoder
    loads and the evaluation text is read on first use."""

    def __init__(
        self, args: TrainingArgs, data_dir: str | None, progress: bool, cache: Path | None
    ) -> None:
        self.args, self.data_dir, self.progress, self.cache = args, data_dir, progress, cache
        self.vectors = None if cache is None else EmbeddingCache(cache / "vectors", max_items=0)

    def folder(self, key: str, part: str) -> Path | None:
        return None if self.cache is None else self.cache / key / part

    @functools.cached_property
    def encoder(self) -> ContextualSentenceEncoder:
        return ContextualSentenceEncoder(
            get_encoder(self.args.encoder, self.args.encoder_adapter),
            window_tokens=self.args.context_tokens,
            paragraph_cache_size=500_000,
            table_context=self.args.table_context,
        )

    @functools.cached_property
    def fingerprints(self) -> set[bytes]:
        return evaluation_fingerprints(self.data_dir)

    def datasets(self, split: str) -> TrainingSet:
        """The datasets' train examples, or the dev examples (one seed, never decontaminated
        against themselves)."""
        args = self.args
        train = split == "train"
        return _cached(
            self.folder(_datasets_key(args), split),
            lambda: build_training_set(
                self.encoder,
                split,
                args.datasets,
                args.lengths_words,
                args.seeds if train else (0,),
                args.max_per_source if train else DEV_EXAMPLES_PER_SOURCE,
                self.fingerprints if train else None,
                args.decontamination_threshold,
                self.data_dir,
                self.progress,
                args.sentence_labels,
                self.vectors,
                args.instruction_copies if train else 0.0,
            ),
        )

    @functools.cached_property
    def examples(self) -> dict[str, list[SyntheticExample]]:
        return _examples_of_files([*self.args.synthetic, *self.args.named_synthetic])

    def held_out(self) -> list[SyntheticExample]:
        """A hash-split slice of the synthetic examples: the dev set of a run without datasets."""
        synthetic = [e for path in self.args.synthetic for e in self.examples[path]]
        return [e for e in synthetic if split_of(e.id, SYNTHETIC_DEV_FRACTION) == "dev"]

    def synthetic(self) -> TrainingSet:
        return _cached(self.folder(_data_key(self.args), "synthetic"), self._build_synthetic)

    def _build_synthetic(self) -> TrainingSet:
        args, read = self.args, self.examples
        synthetic = [example for path in args.synthetic for example in read[path]]
        to_name = [example for path in args.named_synthetic for example in read[path]]
        named, unnamed = named_module.named_copies(to_name)
        among = args.named_among
        beside = named_module.other_filers(named, to_name, among) if among else {}
        dev_ids = {e.id for e in self.held_out()}
        kept = [
            e
            for e in synthetic + named
            if args.datasets or e.id.removesuffix(named_module.NAMED_SUFFIX) not in dev_ids
        ]
        kept, cut = begin_some_at_evidence(kept, args.evidence_first)
        part = synthetic_training_set(
            self.encoder,
            kept,
            self.fingerprints,
            args.decontamination_threshold,
            self.progress,
            self.vectors,
            beside,
            args.row_context_negative,
            args.instruction_copies,
        )
        if not part.labels:
            raise ValueError(
                "no synthetic example is left to train on: "
                f"{part.manifest['dropped_contaminated']} shared evaluation text and "
                f"{part.manifest['dropped_without_content']} labelled no line that says something"
            )
        # counted after the drops (contaminated, no content): a dropped cut was not trained on
        part.manifest["starting_at_evidence"] = len(cut - set(part.manifest["dropped_ids"]))
        if args.named_synthetic:  # trained on: a file named twice counts twice
            dropped = set(part.manifest["dropped_ids"])
            part.manifest["named"] = sum(
                e.id.endswith(named_module.NAMED_SUFFIX) and e.id not in dropped for e in kept
            )
            part.manifest["named_without_filer"] = unnamed
        return part

    def synthetic_dev(self) -> TrainingSet:
        return _cached(
            self.folder(_data_key(self.args), "dev"),
            lambda: synthetic_training_set(
                self.encoder,
                self.held_out(),
                None,
                progress=self.progress,
                cache=self.vectors,
                row_context_negative=self.args.row_context_negative,
            ),
        )


def build_data(
    args: TrainingArgs, data_dir: str | None, progress: bool, cache: Path | None
) -> tuple[TrainingSet, TrainingSet]:
    """Train and dev sets; with ``cache``, each part (the datasets' examples, the synthetic
    ones) is built once and read back by every later run that shares it."""
    builder = _DataBuilder(args, data_dir, progress, cache)
    parts = []
    if args.datasets:
        parts.append(builder.datasets("train"))
    if args.synthetic or args.named_synthetic:
        parts.append(builder.synthetic())
    if not parts:
        raise ValueError("no training data: name datasets or --synthetic files")
    train_set = parts[0] if len(parts) == 1 else concatenate(*parts)
    dev_set = builder.datasets("dev") if args.datasets else builder.synthetic_dev()
    return train_set, dev_set


def _examples_of_files(paths: Sequence[str]) -> dict[str, list[SyntheticExample]]:
    """Each file's examples, read once however often it is named (reading segments every
    example's text: about a minute for the committed filings), without those drawn from the
    filings development split's reports."""
    return {path: read_training_examples(Path(path)) for path in dict.fromkeys(paths)}


def fine_tune_members(
    args: TrainingArgs,
    train_set: TrainingSet,
    dev_set: TrainingSet,
    progress: bool,
    ensemble: ScannerEnsemble,
) -> tuple[ScannerEnsemble, dict[str, Any]]:
    """Fine-tune every member of an ensemble on the same data, one after another.

    The history holds every member's losses and dev rows (each row names its member), and
    the members' summed steps and time.
    """
    histories = [train(args, train_set, dev_set, progress, initial=m)[1] for m in ensemble.members]
    history = {
        "loss": [loss for h in histories for loss in h["loss"]],
        "dev": [
            {**row, "epoch": f"{row['epoch']} (member {i})"}
            for i, h in enumerate(histories)
            for row in h["dev"]
        ],
        "optimizer_steps": sum(h["optimizer_steps"] for h in histories),
        "seconds": sum(h["seconds"] for h in histories),
    }
    return ensemble.eval(), history


def run_training(
    args: TrainingArgs,
    out_dir: Path,
    data_dir: str | None = None,
    progress: bool = True,
    data_cache: Path | None = None,
) -> dict[str, Any]:
    """Build the data, train, and write a checkpoint with its model card and manifest."""
    started = time.perf_counter()
    torch.set_num_threads(args.threads)
    train_set, dev_set = build_data(args, data_dir, progress, data_cache)
    data_seconds = time.perf_counter() - started
    initial = None
    if args.init_from is not None:
        from longscan.scanning.checkpoint import load_checkpoint

        initial, info = load_checkpoint(Path(args.init_from))
        if info.encoder != train_set.manifest["encoder"]:
            raise ValueError(
                f"{args.init_from} reads {info.encoder} vectors, the data has "
                f"{train_set.manifest['encoder']}"
            )
        args.model = initial.config
    if isinstance(initial, ScannerEnsemble):
        model, history = fine_tune_members(args, train_set, dev_set, progress, initial)
    else:
        model, history = train(args, train_set, dev_set, progress, initial=initial)
    report = {
        "longscan_version": __version__,
        "args": args.to_dict(),
        "train_manifest": train_set.manifest,
        "dev_manifest": dev_set.manifest,
        "dev_metrics": history["dev"],
        "optimizer_steps": history["optimizer_steps"],
        "final_train_loss": sum(history["loss"][-50:]) / max(len(history["loss"][-50:]), 1),
        "seconds_data": round(data_seconds, 1),
        "seconds_training": round(history["seconds"], 1),
        "seconds_total": round(time.perf_counter() - started, 1),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
    }
    adapter = None if args.encoder_adapter is None else Path(args.encoder_adapter)
    encoder = train_set.manifest["encoder"]
    save_checkpoint(model, out_dir, encoder, {"seed": args.seed}, encoder_adapter=adapter)
    (out_dir / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "loss.json").write_text(json.dumps(history["loss"]) + "\n")
    command = "longscan " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "run_training(...)"
    (out_dir / "MODEL_CARD.md").write_text(model_card(report, command))
    return report


def train_from_options(options: TrainOptions) -> dict[str, Any]:
    """What ``longscan train`` asks: a token-level scanner fine-tuned (its whole report), or
    the sentence scanner trained (its development metrics and time), written to ``out``.

    Raises:
        ValueError: options that contradict each other, or that name what does not exist.
        CheckpointError: ``init_from`` cannot be read.
    """
    if options.named_among and not options.named_synthetic:
        raise ValueError("--named-among reads --named-synthetic copies: name a file with it")
    if options.token_level:
        return spscanner.train_from_options(options)
    args = TrainingArgs.from_options(options)
    report = run_training(args, options.out, data_cache=options.data_cache)
    return {key: report[key] for key in ("dev_metrics", "seconds_total")}
