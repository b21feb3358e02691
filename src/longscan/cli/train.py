"""The training commands: the scanner (``train``), the bi-encoder, the re-scorer and the
reader; and the checkpoints they build on (``spscanner-convert``, ``ensemble``)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import shlex
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from longscan.cli.common import Verbose, console, fail, setup_logging
from longscan.training.options import TrainOptions

Command = TypeVar("Command", bound=Callable[..., None])
HotpotQAQuestions = Annotated[
    int | None, typer.Option(min=0, help="HotpotQA training questions (default: all).")
]
MuSiQueQuestions = Annotated[
    int | None, typer.Option(min=0, help="MuSiQue training questions (default: all).")
]


def _options_of(config: type) -> Callable[[Command], Command]:
    """Give a command an option per field of the dataclass ``config``, ahead of its own
    parameters, from the flags, help and bounds in the field's metadata
    (``training.options.option``): the options are declared once, where they are used.
    The command receives them as keyword arguments."""
    hints = typing.get_type_hints(config)
    options = [_option(field, hints[field.name]) for field in dataclasses.fields(config)]

    def give(command: Command) -> Command:
        own = inspect.signature(command, eval_str=True).parameters.values()
        named = [p for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD]
        command.__signature__ = inspect.Signature([*options, *named])  # type: ignore[attr-defined]
        return command

    return give


def _option(field: dataclasses.Field[Any], hint: Any) -> inspect.Parameter:
    """The keyword parameter typer reads as ``field``'s option; no default: required."""
    settings = {key: value for key, value in field.metadata.items() if key != "flags"}
    option = typer.Option(*field.metadata["flags"], **settings)
    default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
    return inspect.Parameter(
        field.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[hint, option],
    )


@_options_of(TrainOptions)
def train_command(*, verbose: Verbose = False, **options: Any) -> None:
    """Train the scanner on the shared datasets' train splits and/or synthetic examples, and
    write a checkpoint; `--init-from` fine-tunes an existing one on your own domain."""
    setup_logging(verbose)
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.training.pipeline import train_from_options

    asked = TrainOptions(**options)
    try:
        report = train_from_options(asked)
    except (ValueError, FileNotFoundError, CheckpointError) as error:
        raise fail(str(error)) from None
    console.print_json(json.dumps(report))
    console.print(f"wrote {asked.out}", highlight=False)


def train_encoder_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    pairs: Annotated[
        Path, typer.Option(help="Mined pairs (JSONL) written by `train-reranker --pairs-cache`.")
    ],
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=2)] = 64,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    init_from: Annotated[
        Path | None,
        typer.Option(help="Adapter folder to train on from (e.g. the shipped scanner's)."),
    ] = None,
    synthetic_from: Annotated[
        list[Path] | None,
        typer.Option(
            help="Keep the synthetic pairs of these `synth` example files' questions only "
            "(e.g. `synth-agree`'s output); repeatable."
        ),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the bi-encoder (a LoRA adapter over the packaged MiniLM) on the re-scorer's
    mined first-round pairs: each question against its gold sentence, one mined look-alike
    and the batch's other sentences (MultipleNegativesRankingLoss). Runs on a GPU when torch
    sees one (LONGSCAN_DEVICE chooses), in float32 as on the CPU."""
    setup_logging(verbose)
    import torch

    from longscan.training.encoder import EncoderTrainConfig, run_encoder_training

    torch.set_num_threads(threads)
    try:
        report = run_encoder_training(
            out,
            pairs,
            EncoderTrainConfig(
                epochs, batch_size, lr, seed=seed, init_from=init_from and str(init_from)
            ),
            synthetic_from=synthetic_from or (),
        )
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise fail(str(error)) from None
    _print_summary(report, "triplets", out)


def train_reranker_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    squad: Annotated[int, typer.Option(min=0, help="SQuAD training questions.")] = 2000,
    hotpotqa: HotpotQAQuestions = None,
    musique: MuSiQueQuestions = None,
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=1)] = 32,
    lr: Annotated[float, typer.Option(min=0.0)] = 3e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    pairs_cache: Annotated[
        Path | None, typer.Option(help="JSONL of mined pairs: read if present, else written.")
    ] = None,
    synthetic: Annotated[
        list[Path] | None,
        typer.Option(help="`longscan synth` examples (JSONL) to mine pairs from too; repeatable."),
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(help="Adapter folder to train on from (e.g. the shipped re-scorer)."),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the cross-encoder re-scorer (a LoRA adapter and a head over the packaged
    MiniLM) on the shared datasets' train splits, and on synthetic examples when named, with
    hard negatives mined by BM25 and dense from each question's own document, and second-hop
    pairs. Runs on a GPU when torch sees one (LONGSCAN_DEVICE chooses), in float32 as on the
    CPU."""
    setup_logging(verbose)
    import torch

    from longscan.training.reranker import (
        MiningConfig,
        TrainConfig,
        run_reranker_training,
        stalled,
    )

    torch.set_num_threads(threads)
    try:
        report = run_reranker_training(
            out,
            _sources(squad, hotpotqa, musique),
            MiningConfig(),
            TrainConfig(epochs, batch_size, lr, seed=seed, init_from=init_from and str(init_from)),
            pairs_cache=pairs_cache,
            synthetic=synthetic or (),
        )
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise fail(str(error)) from None
    warning = None
    if stalled(report):
        warning = (
            f"[yellow]warning: the loss barely fell ({report['initial_loss']} → "
            f"{report['final_loss']}): this seed did not learn; train again with another "
            "--seed before using the adapter[/]"
        )
    _print_summary(report, "pairs", out, warning)


def train_reader_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    squad: Annotated[
        int, typer.Option(min=0, help="SQuAD training questions (the split holds 5,339).")
    ] = 6000,
    hotpotqa: HotpotQAQuestions = None,
    musique: MuSiQueQuestions = None,
    max_windows: Annotated[
        int | None,
        typer.Option(min=1, help="Training windows, drawn at random (default: all)."),
    ] = None,
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=1)] = 16,
    lr: Annotated[float, typer.Option(min=0.0)] = 4e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the extractive reader (a LoRA adapter and a span head over the packaged
    MiniLM) on the shared datasets' train splits: each question read with its gold sentences
    among distractor sentences, or with answerless sentences only; then score it on the
    development sets, with the scores written into its model card."""
    setup_logging(verbose)
    import torch

    from longscan.training.reader import ReaderTrainConfig, run_reader_training

    torch.set_num_threads(threads)
    config = ReaderTrainConfig(epochs, batch_size, lr, seed=seed, max_windows=max_windows)
    try:
        report = run_reader_training(out, _sources(squad, hotpotqa, musique), config)
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise fail(str(error)) from None
    _print_summary(report, "windows", out)


def _sources(squad: int, hotpotqa: int | None, musique: int | None) -> dict[str, int | None]:
    """The datasets' training questions asked for, those given 0 left out (None: all)."""
    limits = {"squad": squad, "hotpotqa": hotpotqa, "musique": musique}
    return {name: limit for name, limit in limits.items() if limit != 0}


def _print_summary(
    report: dict[str, Any], counted: str, out: Path, warning: str | None = None
) -> None:
    """An adapter trainer's report in brief (what it ``counted``, steps, losses, time), the
    ``warning`` (rich markup) if any, and where it wrote."""
    summary = {key: report[key] for key in (counted, "steps", "initial_loss", "final_loss")}
    console.print_json(json.dumps({**summary, "seconds_total": report["seconds_total"]}))
    if warning is not None:
        console.print(warning)
    console.print(f"wrote {out}", highlight=False)


def spscanner_convert(
    source: Annotated[
        Path,
        typer.Argument(
            help="A published SPScanner folder: config.json (mamba_ssm's MambaConfig), "
            "pytorch_model.bin or model.safetensors, tokenizer.json."
        ),
    ],
    out: Annotated[Path, typer.Argument(help="Checkpoint folder to write.")],
    sha256: Annotated[
        str | None, typer.Option(help="The weights file's published SHA-256, checked first.")
    ] = None,
    tokenizer: Annotated[
        Path | None, typer.Option(help="A tokenizer.json to use instead of the folder's.")
    ] = None,
) -> None:
    """Convert the paper's token-level scanner once (its pickle is read only with
    `torch.load(weights_only=True)`), for `-r spscanner:OUT`; later loads read safetensors."""
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.scanning.spscanner import convert_checkpoint, read_spscanner_info

    try:
        convert_checkpoint(source, out, expect_sha256=sha256, tokenizer=tokenizer)
        info = read_spscanner_info(out)
    except CheckpointError as error:
        raise fail(str(error)) from None
    console.print_json(json.dumps({"model": info.config.to_dict(), "source": info.source}))
    console.print(f"wrote {out}; use it with -r spscanner:{out}", highlight=False)


def ensemble(
    members: Annotated[
        list[Path],
        typer.Argument(help="Checkpoints written by `longscan train` (one recipe, other seeds)."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the ensemble checkpoint.")],
) -> None:
    """Combine checkpoints trained with other seeds into one whose logit is their mean."""
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.training.ensemble import combine_checkpoints

    try:
        combine_checkpoints(members, out, "longscan " + shlex.join(sys.argv[1:]))
    except (ValueError, CheckpointError) as error:
        raise fail(str(error)) from None
    console.print(f"wrote {out}", highlight=False)
