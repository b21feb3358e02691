"""What ``longscan train`` is asked, declared once: the command builds its options from these
fields (each one's flags, help and bounds are in its metadata) and ``pipeline`` decides from
them what to train. Nothing heavy is imported here, so the command line's help stays fast."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any

LENGTHS_WORDS = (1_500, 3_800, 7_700)
"""Training documents of about 2k/5k/10k tokens, the paper's mix (1.3 tokens a word)."""


def option(default: Any = MISSING, help: str | None = None, *flags: str, **bounds: float) -> Any:
    """A field that is also a command-line option: its ``flags`` (none: from the field's
    name), ``help`` and ``bounds`` (``min``, ``max``); no default makes it required."""
    return field(default=default, metadata={"flags": flags, "help": help, **bounds})


def parse_lengths(text: str) -> tuple[int, ...]:
    """``--lengths`` as positive word counts.

    Raises:
        ValueError: a value that is not a positive whole number.
    """
    values = text.split(",")
    if not all(value.strip().isdigit() and int(value) > 0 for value in values):
        raise ValueError(f"--lengths takes positive word counts, comma-separated, not {text!r}")
    return tuple(int(value) for value in values)


@dataclass(frozen=True)
class TrainOptions:
    """The options of ``longscan train``, as given: lists comma-separated, ``None`` where the
    default depends on other options (``--token-level``) or on the checkpoint fine-tuned."""

    out: Path = option(help="Checkpoint folder to write.")
    epochs: int = option(1, min=1)
    max_per_source: int = option(250, "Examples per (dataset, length, seed).", min=1)
    seeds: str = option("0,1,2,3", "Builder seeds, comma-separated.")
    lengths: str = option(
        ",".join(map(str, LENGTHS_WORDS)),
        "Lengths of the documents built from the datasets, in words, comma-separated; a short "
        "one (150) gives single SQuAD paragraphs and the questions' own paragraphs alone.",
    )
    bidirectional: bool = option(False, "Add the reversed pass.", "--bidirectional/--causal")
    read_twice: bool = option(
        False,
        "Read the document twice and score the second reading (causal only).",
        "--read-twice/--read-once",
    )
    feature_skip: bool = option(
        False,
        "Add a linear score of the cosine and features to every logit (wide path).",
        "--feature-skip/--no-feature-skip",
    )
    features: int | None = option(
        None,
        "Read the first N per-sentence features (default: the shipped layout, the first 16 and "
        "window_dense_rank; 18 is the first 16 and the two query-part columns).",
        min=0,
    )
    feature: list[str] | None = option(
        None,
        "Also read this per-sentence feature, by name (repeatable; e.g. --features 18 "
        "--feature window_dense_rank).",
    )
    d_model: int = option(256, min=8)
    layers: int = option(4, min=1)
    lr: float | None = option(
        None, "Peak learning rate (default 2e-3; 1e-4 with --token-level).", min=0.0
    )
    dropout: float = option(0.1, min=0.0, max=0.9)
    seed: int = option(0)
    threads: int = option(2, "torch threads.", min=1)
    data_cache: Path | None = option(None, "Folder to keep the encoded training data for reuse.")
    datasets: str = option(
        "squad,hotpotqa,musique", "Dataset sources, comma-separated; empty for synthetic only."
    )
    synthetic: list[Path] | None = option(
        None,
        "`longscan synth` JSONL to mix in; repeatable (a file named twice weighs twice).",
        "--synthetic",
    )
    named_synthetic: list[Path] | None = option(
        None,
        "`longscan synth` JSONL over SEC filings: mix in a copy of each example whose question "
        "names the filer (from its cover page); repeatable.",
        "--named-synthetic",
    )
    named_among: int = option(
        0,
        "Read each --named-synthetic copy beside this many other filers' spans whose questions "
        "share its words, as a collection of filings is read.",
        min=0,
    )
    init_from: Path | None = option(
        None,
        "Fine-tune this checkpoint (e.g. the shipped one) instead of a new model.",
        "--init-from",
        "--init",
    )
    token_level: bool = option(
        False,
        "Fine-tune a token-level scanner (a checkpoint from `longscan spscanner-convert`, "
        "given by --init) with the paper's recipe; needs a GPU unless the network is tiny.",
        "--token-level",
    )
    batch_size: int = option(64, "--token-level: examples per optimiser step.", min=1)
    listwise: float = option(
        0.0, "Weight of a listwise softmax term beside the BCE (0: BCE alone).", min=0.0
    )
    sentence_labels: bool = option(
        False,
        "MuSiQue gold: the sentence answering each hop, or the whole paragraph.",
        "--sentence-labels/--paragraph-labels",
    )
    encoder: str | None = option(
        None,
        "Sentence vectors the scanner reads: all-MiniLM-L6-v2, or all-MiniLM-L6-v2+int8 (its "
        "int8 export: encodes about twice as fast). Default: --init-from's, else "
        "all-MiniLM-L6-v2.",
    )
    encoder_adapter: Path | None = option(
        None,
        "A `longscan train-encoder` folder: the encoder reads with its fine-tuned updates, and "
        "the checkpoint keeps a copy. Default: --init-from's, else none.",
    )
    context_tokens: int | None = option(
        None,
        "Tokens per window of paragraph context the encoder reads (fewer: faster). Default: "
        "--init-from's, else 256.",
        min=8,
        max=512,
    )
    table_context: bool | None = option(
        None,
        "The encoder reads a table row after its table's title, column header and row group. "
        "Default: --init-from's, else off.",
        "--table-context/--no-table-context",
    )
    evidence_first: float = option(
        0.0,
        "Share of the --synthetic examples cut to begin at their first labelled sentence (their "
        "spans never do otherwise).",
        min=0.0,
        max=1.0,
    )
    row_context_negative: bool = option(
        False,
        "A synthetic example's labelled title, column header or group line of one of its "
        "labelled table rows is a negative: evidence carries a row's context with it.",
        "--row-context-negative",
    )
    instruction_copies: float = option(
        0.0,
        "Share of the training examples also trained on with an instruction before their "
        "question, as prompts send it (generic instructions composed by "
        "longscan.training.instructions, two in three naming a topic from the example's units "
        "that are not evidence).",
        min=0.0,
        max=1.0,
    )

    @property
    def builder_seeds(self) -> tuple[int, ...]:
        """``--seeds`` as numbers."""
        return tuple(int(seed) for seed in self.seeds.split(","))

    @property
    def dataset_names(self) -> tuple[str, ...]:
        """``--datasets`` without its empty names (``--datasets ''``: synthetic only)."""
        return tuple(name for name in self.datasets.split(",") if name.strip())
