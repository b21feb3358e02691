"""Training hyper-parameters, saved next to the weights."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from longscan.encoders.contextual import DEFAULT_WINDOW_TOKENS, parse_name
from longscan.encoders.minilm import DEFAULT_ENCODER, without_adapter
from longscan.models.config import ScannerConfig
from longscan.scanning.checkpoint import read_info
from longscan.scanning.features import FEATURE_NAMES, N_FEATURES, TRAINED_FEATURES
from longscan.training.decontamination import DECONTAMINATION_THRESHOLD
from longscan.training.options import LENGTHS_WORDS, TrainOptions, parse_lengths


@dataclass
class TrainingArgs:
    """The paper's recipe (SEEDS.md §1), with the deviations the CPU setting needs.

    The paper fine-tunes a pretrained LM at peak lr 1e-4; our scan layers start from scratch
    on frozen sentence vectors, so the default peak lr is higher (measured to converge).

    Attributes:
        lengths_words: Training document lengths (≈2k/5k/10k tokens at 1.3 tokens/word).
        seeds: Builder seeds; each gives another mix of distractors for the same questions.
        datasets: Sources of labelled questions.
        max_per_source: Cap on examples per (dataset, length, seed).
        epochs, batch_size, accumulation: Optimisation length; effective batch =
            batch_size × accumulation (the paper's is 64).
        lr, betas, weight_decay, warmup_ratio, max_grad_norm: AdamW, cosine schedule with
            linear warm-up, gradient clipping.
        dev_fraction: Held-out examples from the training sources, for development metrics.
        decontamination_threshold: Drop a training document sharing more than this share of
            its sentences with any evaluation document.
        synthetic: JSONL files of ``longscan synth`` examples, mixed in (or alone, with
            ``datasets=()``).
        named_synthetic: JSONL files of ``synth`` examples over filings whose copies, the
            question naming the filer (``training.named``), are mixed in.
        named_among: Other filers' spans each named copy is read beside (``other_filers``),
            as a collection of filings is read; 0 reads each copy alone.
        init_from: A checkpoint folder to fine-tune instead of training from scratch.
        listwise: Weight of the listwise softmax term added to the paper's BCE (0: the
            paper's objective alone).
        sentence_labels: Label MuSiQue's sentences that answer each hop rather than its
            whole supporting paragraphs (see ``read_musique``).
        encoder: The sentence encoder whose vectors the scanner learns to read
            (``all-MiniLM-L6-v2``, or ``all-MiniLM-L6-v2+int8``, its faster int8 export).
        encoder_adapter: A ``longscan train-encoder`` folder whose fine-tuned updates the
            encoder carries (its hash joins the encoder's name; the checkpoint keeps a copy).
        context_tokens: Tokens of paragraph context each window of the encoder reads.
        evidence_first: Share of the synthetic examples cut to begin at their first
            labelled sentence (``begin_some_at_evidence``); their spans never do otherwise.
        table_context: The encoder reads a table row after its table's title, column
            header and row group (``ContextualSentenceEncoder``).
        row_context_negative: A synthetic example's labelled line that is the title, column
            header or group of one of its labelled table rows is a negative
            (``synthetic_labels``).
        instruction_copies: Share of the training examples copied with an instruction
            before their question (``training.instructions``): prompts carry one.
    """

    model: ScannerConfig = field(default_factory=ScannerConfig)
    lengths_words: tuple[int, ...] = LENGTHS_WORDS
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    datasets: tuple[str, ...] = ("squad", "hotpotqa", "musique")
    max_per_source: int = 250
    epochs: int = 1
    batch_size: int = 8
    accumulation: int = 2
    lr: float = 2e-3
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    decontamination_threshold: float = DECONTAMINATION_THRESHOLD
    seed: int = 0
    threads: int = 2
    synthetic: tuple[str, ...] = ()
    named_synthetic: tuple[str, ...] = ()
    named_among: int = 0
    init_from: str | None = None
    listwise: float = 0.0
    sentence_labels: bool = False
    encoder: str = DEFAULT_ENCODER
    encoder_adapter: str | None = None
    context_tokens: int = DEFAULT_WINDOW_TOKENS
    table_context: bool = False
    evidence_first: float = 0.0
    row_context_negative: bool = False
    instruction_copies: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        return data

    @classmethod
    def from_options(cls, options: TrainOptions) -> TrainingArgs:
        """The sentence scanner's run that ``longscan train`` asks for: its feature layout,
        the encoder reading of the checkpoint it fine-tunes, the default learning rate.

        Raises:
            ValueError: an unknown feature, a length that is no word count.
            CheckpointError: ``init_from`` cannot be read.
        """
        names = feature_layout(options.features, options.feature or ())
        encoder, adapter, window, tables = encoder_reading(
            options.init_from,
            options.encoder,
            options.encoder_adapter,
            options.context_tokens,
            options.table_context,
        )
        model = ScannerConfig(
            d_model=options.d_model,
            n_layers=options.layers,
            n_features=len(names),
            feature_names=names,
            bidirectional=options.bidirectional,
            read_twice=options.read_twice,
            feature_skip=options.feature_skip,
            dropout=options.dropout,
        )
        return cls(
            model=model,
            seeds=options.builder_seeds,
            lengths_words=parse_lengths(options.lengths),
            max_per_source=options.max_per_source,
            epochs=options.epochs,
            lr=options.lr or 2e-3,
            seed=options.seed,
            threads=options.threads,
            datasets=options.dataset_names,
            synthetic=tuple(str(path) for path in options.synthetic or ()),
            named_synthetic=tuple(str(path) for path in options.named_synthetic or ()),
            named_among=options.named_among,
            init_from=None if options.init_from is None else str(options.init_from),
            listwise=options.listwise,
            sentence_labels=options.sentence_labels,
            encoder=encoder,
            encoder_adapter=None if adapter is None else str(adapter),
            context_tokens=window,
            table_context=tables,
            evidence_first=options.evidence_first,
            row_context_negative=options.row_context_negative,
            instruction_copies=options.instruction_copies,
        )


def feature_layout(first: int | None, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The per-sentence features a new scanner reads: the ``first`` N columns (``None``: the
    shipped layout), then the ``extra`` ones named, each once.

    Raises:
        ValueError: a name that is not a feature.
    """
    unknown = [name for name in extra if name not in FEATURE_NAMES]
    if unknown:
        choices = ", ".join(FEATURE_NAMES)
        raise ValueError(f"--feature {unknown[0]}: not a feature; choose from {choices}")
    layout = TRAINED_FEATURES if first is None else FEATURE_NAMES[: min(first, N_FEATURES)]
    return tuple(dict.fromkeys([*layout, *extra]))


def encoder_reading(
    init_from: Path | None,
    encoder: str | None,
    encoder_adapter: Path | None,
    context_tokens: int | None,
    table_context: bool | None,
) -> tuple[str, Path | None, int, bool]:
    """The encoder, its adapter, window and table reading a training run uses: those given,
    else those of the checkpoint it fine-tunes (which refuses any other), else the
    defaults."""
    base, adapter, window, tables = DEFAULT_ENCODER, None, DEFAULT_WINDOW_TOKENS, False
    if init_from is not None:
        info = read_info(init_from)[0]
        base, window, tables = parse_name(info.encoder)
        base, adapter = without_adapter(base), info.encoder_adapter
    chosen_tables = tables if table_context is None else table_context
    return encoder or base, encoder_adapter or adapter, context_tokens or window, chosen_tables
