"""``longscan train`` end to end: data → decontamination → training → checkpoint + card."""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from longscan import __version__
from longscan.bench.builders import split_of
from longscan.encoders.adapter import WEIGHTS_FILE
from longscan.encoders.cache import EmbeddingCache, file_sha256
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.encoders.minilm import cache_name, get_encoder
from longscan.models.scanner import ScannerEnsemble
from longscan.scanning import features as features_module
from longscan.scanning.checkpoint import save_checkpoint
from longscan.scanning.features import FEATURE_NAMES
from longscan.tables import rules_digest
from longscan.training import data as data_module
from longscan.training import named as named_module
from longscan.training.args import TrainingArgs
from longscan.training.card import model_card
from longscan.training.data import (
    TrainingSet,
    build_training_set,
    concatenate,
    evaluation_fingerprints,
    synthetic_training_set,
)
from longscan.training.synthetic import (
    SyntheticExample,
    begin_some_at_evidence,
    read_examples,
)
from longscan.training.trainer import train

DEV_EXAMPLES_PER_SOURCE = 30
SYNTHETIC_DEV_FRACTION = 0.1


def _data_key(args: TrainingArgs) -> str:
    """The data depends on these arguments only (not on the model or the optimiser)."""
    parts = (
        args.datasets,
        args.lengths_words,
        args.seeds,
        args.max_per_source,
        args.decontamination_threshold,
        DEV_EXAMPLES_PER_SOURCE,
        args.sentence_labels,
        cache_name(args.encoder),  # int8 vectors read row by row since stop 40
        args.context_tokens,
        args.table_context,
        args.evidence_first,
        FEATURE_NAMES,  # the cached data holds every feature column,
        _file_digest(Path(features_module.__file__)),  # computed by this code
        _file_digest(Path(data_module.__file__)),  # and labelled by this code
        tuple(_file_digest(Path(path)) for path in args.synthetic),
        __version__,
    )
    if args.encoder_adapter is not None:  # appended, so data without one keeps its key
        parts += (file_sha256(Path(args.encoder_adapter) / WEIGHTS_FILE),)
    if args.table_context:  # rows read the context that these rules find
        parts += (rules_digest(),)
    if args.named_synthetic:  # copies whose questions this code names
        named_files = tuple(_file_digest(Path(path)) for path in args.named_synthetic)
        parts += (named_files, _file_digest(Path(named_module.__file__)))
    if args.named_among:
        parts += (("named_among", args.named_among),)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    return file_sha256(path)[:16]


def build_data(
    args: TrainingArgs, data_dir: str | None, progress: bool, cache: Path | None
) -> tuple[TrainingSet, TrainingSet]:
    """Train and dev sets; with ``cache``, encoded once and reused by later runs."""
    folder = None if cache is None else cache / _data_key(args)
    if folder is not None and (folder / "dev" / "data.json").is_file():
        return TrainingSet.load(folder / "train"), TrainingSet.load(folder / "dev")
    encoder = ContextualSentenceEncoder(
        get_encoder(args.encoder, args.encoder_adapter),
        window_tokens=args.context_tokens,
        paragraph_cache_size=500_000,
        table_context=args.table_context,
    )
    vectors = None if cache is None else EmbeddingCache(cache / "vectors", max_items=0)
    fingerprints = evaluation_fingerprints(data_dir)
    common = (args.datasets, args.lengths_words)
    parts = []
    if args.datasets:
        parts.append(
            build_training_set(
                encoder,
                "train",
                *common,
                args.seeds,
                args.max_per_source,
                fingerprints,
                args.decontamination_threshold,
                data_dir,
                progress,
                args.sentence_labels,
                vectors,
            )
        )
    read = _examples_of_files([*args.synthetic, *args.named_synthetic])
    synthetic = [example for path in args.synthetic for example in read[path]]
    held_out = [e for e in synthetic if split_of(e.id, SYNTHETIC_DEV_FRACTION) == "dev"]
    to_name = [example for path in args.named_synthetic for example in read[path]]
    named, unnamed = named_module.named_copies(to_name)
    beside = named_module.other_filers(named, to_name, args.named_among) if args.named_among else {}
    synthetic += named
    if synthetic:
        dev_ids = {e.id for e in held_out}
        kept = [
            e
            for e in synthetic
            if args.datasets or e.id.removesuffix(named_module.NAMED_SUFFIX) not in dev_ids
        ]
        kept, cut = begin_some_at_evidence(kept, args.evidence_first)
        part = synthetic_training_set(
            encoder, kept, fingerprints, args.decontamination_threshold, progress, vectors, beside
        )
        # counted after the drops (contaminated, no content): a dropped cut was not trained on
        part.manifest["starting_at_evidence"] = len(cut - set(part.manifest["dropped_ids"]))
        if args.named_synthetic:  # trained on: a file named twice counts twice
            dropped = set(part.manifest["dropped_ids"])
            part.manifest["named"] = sum(
                e.id.endswith(named_module.NAMED_SUFFIX) and e.id not in dropped for e in kept
            )
            part.manifest["named_without_filer"] = unnamed
        parts.append(part)
    if not parts:
        raise ValueError("no training data: name datasets or --synthetic files")
    train_set = parts[0] if len(parts) == 1 else concatenate(*parts)
    if args.datasets:
        dev_set = build_training_set(
            encoder,
            "dev",
            *common,
            (0,),
            DEV_EXAMPLES_PER_SOURCE,
            None,
            args.decontamination_threshold,
            data_dir,
            progress,
            args.sentence_labels,
            vectors,
        )
    else:  # synthetic only: a hash-split slice of the examples, never trained on
        dev_set = synthetic_training_set(encoder, held_out, None, progress=progress, cache=vectors)
    if folder is not None:
        train_set.save(folder / "train")
        dev_set.save(folder / "dev")
    return train_set, dev_set


def _examples_of_files(paths: Sequence[str]) -> dict[str, list[SyntheticExample]]:
    """Each file's examples, read once however often it is named (reading segments every
    example's text: about a minute for the committed filings)."""
    return {path: read_examples(Path(path)) for path in dict.fromkeys(paths)}


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
