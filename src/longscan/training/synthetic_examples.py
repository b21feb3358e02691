"""Synthetic examples as data: their type, a run's counts, and their files (JSON Lines, or
packed without their text for a file small enough to commit), each read back checked."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from longscan.answering.llm import Completion
from longscan.bench.builders import split_of
from longscan.bench.contracts import HELD_OUT_CONTRACTS
from longscan.bench.filings import HELD_OUT_FILINGS
from longscan.documents import Document
from longscan.readers.files import read_file


@dataclass
class SyntheticExample:
    """One training example: a span of a source document, a question, labelled sentences.

    ``labels`` are ``(start, end)`` offsets into ``text``, each exactly one sentence of
    ``Document(id, text)``; ``source_start`` places ``text`` in the source document.
    """

    id: str
    strategy: str
    question: str
    text: str
    labels: list[tuple[int, int]]
    source_id: str
    source_start: int
    chunks: list[tuple[int, int]]  # labelled chunks as [first, last) sentence indices of the source
    link_distance: int | None = None  # sentences between the two chunks' starts

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> SyntheticExample:
        return cls.from_dict(json.loads(line))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SyntheticExample:
        labels = [tuple(x) for x in raw["labels"]]
        return cls(**{**raw, "labels": labels, "chunks": [tuple(x) for x in raw["chunks"]]})


@dataclass
class SynthStats:
    """Per-strategy counts: attempts, kept, dropped by reason, label balance, link distance."""

    attempts: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    dropped: dict[str, Counter[str]] = field(default_factory=dict)
    positives: Counter[str] = field(default_factory=Counter)
    sentences: Counter[str] = field(default_factory=Counter)
    distances: dict[str, list[int]] = field(default_factory=dict)
    llm: dict[str, Counter[str]] = field(default_factory=dict)  # calls, tokens, seconds

    def count_call(self, strategy: str, completion: Completion) -> None:
        """Cost of a call as first made (a cached reply keeps its original counts)."""
        usage = self.llm.setdefault(strategy, Counter())
        usage["calls"] += 1
        usage["prompt_tokens"] += completion.prompt_tokens
        usage["completion_tokens"] += completion.completion_tokens
        usage["seconds"] += completion.seconds

    def drop(self, strategy: str, reason: str) -> None:
        self.dropped.setdefault(strategy, Counter())[reason] += 1

    def keep(self, example: SyntheticExample) -> None:
        self.kept[example.strategy] += 1
        self.observe(example)

    def observe(self, example: SyntheticExample) -> None:
        """Label balance and link distance of an example (kept now or in an earlier run)."""
        self.positives[example.strategy] += len(example.labels)
        self.sentences[example.strategy] += len(sentence_spans(example.text))
        if example.link_distance is not None:
            self.distances.setdefault(example.strategy, []).append(example.link_distance)

    def as_dict(self) -> dict[str, Any]:
        report = {}
        for strategy in sorted(self.attempts):
            distances = self.distances.get(strategy, [])
            report[strategy] = {
                "attempts": self.attempts[strategy],
                "examples": self.kept[strategy],
                "dropped": dict(self.dropped.get(strategy, {})),
                "positive_rate": self.positives[strategy] / self.sentences[strategy]
                if self.sentences[strategy]
                else None,
                "link_distance_median": float(np.median(distances)) if distances else None,
                "link_distance_mean": float(np.mean(distances)) if distances else None,
                "llm": dict(self.llm.get(strategy, {})),
                "per_1000_examples": {
                    key: round(value * 1000 / self.kept[strategy], 1)
                    for key, value in self.llm.get(strategy, {}).items()
                }
                if self.kept[strategy]
                else None,
            }
        return report


def sentence_spans(text: str) -> set[tuple[int, int]]:
    """``text``'s own sentences as ``(start, end)`` offsets: every label of an example must be
    one of them."""
    return {(int(a), int(b)) for a, b in Document("x", text).sentences}


def starting_at_evidence(example: SyntheticExample) -> SyntheticExample | None:
    """The example cut to begin at its first labelled sentence; None when the cut text's own
    segmentation no longer holds every label as a sentence.

    ``example_span`` never begins a span with its evidence, so a scanner trained on its spans
    alone learns that a document's first sentence is never the answer (BENCHMARKS.md, "A
    short document's first sentence").
    """
    cut = min(start for start, _ in example.labels)
    text = example.text[cut:]
    labels = [(start - cut, end - cut) for start, end in example.labels]
    if not sentence_spans(text).issuperset(labels):
        return None
    return replace(example, text=text, labels=labels, source_start=example.source_start + cut)


def begin_some_at_evidence(
    examples: Sequence[SyntheticExample], share: float
) -> tuple[list[SyntheticExample], set[str]]:
    """``share`` of the examples, chosen by a stable hash of their ids (independent of the
    dev split's), replaced by ``starting_at_evidence``; the rest and any that cannot be cut
    are kept as they are. Returns the examples and the ids of those cut."""
    out, cut = [], set()
    for example in examples:
        chosen = split_of(example.id, share, seed=1) == "dev"
        moved = starting_at_evidence(example) if chosen else None
        if moved is not None:
            cut.add(example.id)
        out.append(moved or example)
    return out, cut


def write_examples(examples: Iterator[SyntheticExample], path: Path) -> int:
    """Stream examples to a JSONL file (the format ``longscan train --synthetic`` reads), a
    line at a time, so a run stopped early keeps what it wrote."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(example.to_json() + "\n")
            out.flush()
            written += 1
    return written


def stats_path(examples: Path) -> Path:
    """Where the run writing ``examples`` keeps its counts (``SynthStats.as_dict``)."""
    return examples.with_name(examples.name + ".stats.json")


def read_examples(path: Path, sources: Path | None = None) -> list[SyntheticExample]:
    """Examples from a JSONL file: ``parse_examples`` of its text."""
    return parse_examples(path.read_text(encoding="utf-8"), str(path), sources)


def parse_examples(text: str, origin: str, sources: Path | None = None) -> list[SyntheticExample]:
    """Examples from JSONL ``text`` (``origin`` names it in errors), each checked: labels
    must be sentences of its text.

    Packed lines (``pack_examples``) carry no text; it is read back from ``sources`` (default:
    the reference data's ``train-docs/``) and must hash as it did when packed.

    Raises:
        ValueError: a line that is not an example, a packed line whose source is missing or
            changed, or a label that is not a sentence.
    """
    examples = []
    # JSON Lines end at "\n" only: str.splitlines would also cut at U+2028 or \x1e, which
    # ensure_ascii=False writes raw inside a string (filings hold both)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if "source" in raw and "text" not in raw:
                raw = unpack_line(raw, sources or train_docs())
            example = SyntheticExample.from_dict(raw)
        except (json.JSONDecodeError, TypeError, KeyError, ValueError) as error:
            raise ValueError(f"{origin}:{number}: not a synthetic example ({error})") from None
        if not example.labels or not set(example.labels) <= sentence_spans(example.text):
            raise ValueError(f"{origin}:{number}: a label is not a sentence of the example's text")
        examples.append(example)
    return examples


def outside_held_out(examples: Sequence[SyntheticExample]) -> list[SyntheticExample]:
    """The examples not drawn from a report of the filings development split or a contract
    of the contract split: those documents are held out whole, so no training run reads a
    line of them."""
    held_out = {*HELD_OUT_FILINGS, *HELD_OUT_CONTRACTS}
    return [e for e in examples if Path(e.source_id).name not in held_out]


def read_training_examples(path: Path) -> list[SyntheticExample]:
    """A file's examples as every training run reads them (the scanner's, the re-scorer's,
    the token-level scanner's): ``read_examples`` without those ``outside_held_out`` drops."""
    return outside_held_out(read_examples(path))


def train_docs() -> Path:
    """The reference data's training documents."""
    from longscan.bench.datasets import data_path

    return data_path("train-docs")


REPEATED = "repeated (the same question of the same chunks of one source)"


def distinct_examples(
    examples: Sequence[SyntheticExample],
) -> tuple[list[SyntheticExample], list[SyntheticExample]]:
    """The examples without repeats, and the repeats left out: a chunk drawn twice (in one
    run or in runs of two seeds) gets the same reply from the response cache, so the same
    question of the same sentences, only in another span. The first is kept."""
    seen: set[tuple[str, tuple[tuple[int, ...], ...], str]] = set()
    kept, repeated = [], []
    for example in examples:
        key = (example.source_id, tuple(tuple(c) for c in example.chunks), example.question)
        (repeated if key in seen else kept).append(example)
        seen.add(key)
    return kept, repeated


def merge_stats(
    reports: Sequence[dict[str, Any]],
    examples: Sequence[SyntheticExample],
    repeated: Sequence[SyntheticExample] = (),
) -> dict[str, Any]:
    """One report for several runs (``SynthStats.as_dict`` each): attempts, kept, drops and
    LLM costs summed, the ``repeated`` examples moved from kept to dropped; label balance and
    link distances recomputed from ``examples`` (those packed), since a rate or a median of
    two runs cannot be added."""
    stats = SynthStats()
    for report in reports:
        for strategy, row in report.items():
            stats.attempts[strategy] += row["attempts"]
            stats.kept[strategy] += row["examples"]
            stats.dropped.setdefault(strategy, Counter()).update(row["dropped"])
            stats.llm.setdefault(strategy, Counter()).update(row["llm"])
    for example in repeated:
        stats.kept[example.strategy] -= 1
        stats.drop(example.strategy, REPEATED)
    for example in examples:
        stats.observe(example)
    return stats.as_dict()


def pack_examples(examples: Sequence[SyntheticExample], sources: Path) -> list[dict[str, Any]]:
    """Examples without their text, for a data file small enough to commit: each names its
    source file (relative to ``sources``), the span's offsets and the source text's SHA-256,
    so ``read_examples`` rebuilds exactly the text that was labelled, or refuses.

    Raises:
        ValueError: a source is not found under ``sources`` exactly once, or its text does
            not hold the example's text at ``source_start``.
    """
    by_name: dict[str, list[Path]] = {}
    for file in sources.rglob("*"):
        by_name.setdefault(file.name, []).append(file)
    read: dict[str, tuple[str, Document]] = {}
    packed = []
    for example in examples:
        if example.source_id not in read:
            found = [f for f in by_name.get(Path(example.source_id).name, [])
                     if f.as_posix().endswith(Path(example.source_id).as_posix())]  # fmt: skip
            if len(found) != 1:
                raise ValueError(f"{example.source_id}: found {len(found)} times under {sources}")
            relative = found[0].relative_to(sources).as_posix()
            read[example.source_id] = (relative, read_file(found[0]))
        relative, source = read[example.source_id]
        end = example.source_start + len(example.text)
        if source.text[example.source_start : end] != example.text:
            raise ValueError(f"{example.id}: {relative} does not hold its text")
        raw = asdict(example)
        del raw["text"], raw["source_id"]
        packed.append(
            {**raw, "source": relative, "source_end": end, "source_sha256": source.content_hash}
        )
    return packed


def pack_files(
    files: Sequence[Path], out: Path, sources: Path | None = None, stats: Path | None = None
) -> tuple[int, int]:
    """The examples of ``files`` (a file a run is still writing read up to its last whole
    line), without repeats, packed into ``out`` (``pack_examples``, ``sources`` by default
    ``train_docs()``) and read back to check them; with ``stats``, the runs' counts summed
    there, read after the examples so they count at least every example packed. The number
    of examples packed and of those left out as repeated.

    Raises:
        FileNotFoundError: a file, a source or a run's counts is missing.
        ValueError: the files share example ids, or an example cannot be packed.
    """
    folder = sources or train_docs()
    read = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        read += parse_examples(text[: text.rfind("\n") + 1], str(file))
    ids = [example.id for example in read]
    if len(set(ids)) != len(ids):
        raise ValueError("the files share example ids: were two runs given the same seed?")
    kept, repeated = distinct_examples(read)
    packed = pack_examples(kept, folder)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in packed), "utf-8")
    read_examples(out, folder)  # what was written reads back, labels and all
    if stats is not None:
        reports = [json.loads(stats_path(file).read_text("utf-8")) for file in files]
        merged = merge_stats(reports, kept, repeated)
        stats.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    return len(packed), len(repeated)


def unpack_line(raw: dict[str, Any], sources: Path) -> dict[str, Any]:
    """A packed line with its text read back from ``sources``."""
    source = read_file(sources / raw["source"])
    if source.content_hash != raw["source_sha256"]:
        raise ValueError(f"{raw['source']} has changed since the example was written")
    rest = {k: v for k, v in raw.items() if k not in ("source", "source_end", "source_sha256")}
    start, end = int(raw["source_start"]), int(raw["source_end"])
    return {**rest, "text": source.text[start:end], "source_id": raw["source"]}
