"""Which synthetic examples a reader agrees with: InPars' filter, for written questions.

The 1.5B writer labels the wrong lines of a table about one question in three (31 of 50
table examples read by hand were answerable from their labels): asked about the automotive
market, it labels the Gaming row. A scanner trained on that learns to answer with a
neighbouring row. The writer saw a chunk of about twelve lines and labelled some of them.
A reader that ranks the chunk's lines for the question (by default the shipped
cross-encoder, reading each line in its context, a table row with its title and header)
agrees when a labelled line is among its first ``max_rank``. InPars keeps only the written
questions its re-ranker scores highest; here an example the reader disagrees with is left
out. The rule looks only at ranks within the example's own chunk: nothing of any benchmark.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from longscan.documents import Document
from longscan.progress import track
from longscan.readers.files import read_file
from longscan.rerankers.abstention import Judge
from longscan.training.data import says_something
from longscan.training.synthetic_examples import SyntheticExample, parse_examples, train_docs

DEFAULT_MAX_RANK = 1  # the reader's first choice among the chunk's lines must be labelled


@dataclass(frozen=True)
class Agreement:
    """How the reader ranked an example's labelled lines among its chunk's lines.

    Attributes:
        rank: 1 + the chunk's lines the reader scores above every labelled line; 0 when no
            labelled line says something (``says_something``), so there is nothing to rank.
        lines: The lines ranked (the chunks' lines, and any labelled line outside them).
    """

    id: str
    strategy: str
    rank: int
    lines: int


def source_lines(example: SyntheticExample, source: Document) -> tuple[list[int], set[int]]:
    """The lines of the chunks the writer was shown and the labelled lines that say
    something (``says_something``), as sentence indices of ``source``: read there, each line
    has the context the writer saw, and a source's headings and tables are found once."""
    index = {(a, b): i for i, (a, b) in enumerate(source.sentences.tolist())}
    start = example.source_start
    labelled = set()
    for a, b in example.labels:
        if (a + start, b + start) not in index:  # the writer labelled the source's sentences
            raise ValueError(f"{example.id}: label {a}-{b} is not a sentence of its source")
        if says_something(example.text[a:b]):
            labelled.add(index[(a + start, b + start)])
    shown = [i for first, last in example.chunks for i in range(first, last)]
    return shown, labelled


def agreement(example: SyntheticExample, source: Document, judge: Judge) -> Agreement:
    """The reader's rank of the example's best labelled line among its chunks' lines."""
    shown, labelled = source_lines(example, source)
    if not labelled:
        return Agreement(example.id, example.strategy, 0, 0)
    lines = sorted(set(shown) | labelled)
    scores = judge.score(example.question, [judge.passage(source, i) for i in lines])
    best = max(score for line, score in zip(lines, scores, strict=True) if line in labelled)
    return Agreement(example.id, example.strategy, 1 + int((scores > best).sum()), len(lines))


class _Sources:
    """Source documents read once each (an example names its source by path)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._documents: dict[str, Document] = {}

    def __call__(self, source_id: str) -> Document:
        if source_id not in self._documents:
            self._documents[source_id] = read_file(self.root / source_id)
        return self._documents[source_id]


@dataclass(frozen=True)
class FilterReport:
    """What ``filter_examples`` kept, and why the rest went (written beside the kept file)."""

    max_rank: int
    reader_sha256: str
    inputs: list[dict[str, str]]
    kept: dict[str, int]
    dropped: dict[str, dict[str, int]]
    ranks: dict[str, int]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @property
    def dropped_count(self) -> int:
        """The examples dropped, every strategy and reason together."""
        return sum(sum(reasons.values()) for reasons in self.dropped.values())


DISAGREES = "the reader ranks another line of the chunk first"
NOTHING_LABELLED = "no labelled line says something"


def filter_examples(
    paths: Sequence[Path],
    judge: Judge,
    max_rank: int = DEFAULT_MAX_RANK,
    sources: Path | None = None,
    progress: bool = True,
) -> tuple[list[str], FilterReport]:
    """The JSONL lines of ``paths`` whose examples the reader agrees with (unchanged), and
    the report. The lines must be packed (``synth-pack``): a packed line names its source
    file, where the chunk's lines are read; it is checked and rebuilt from that source as
    ``read_examples`` does.

    Raises:
        ValueError: ``max_rank`` below 1, a line that is not a valid example, or one that
            carries its text instead of its source's path.
    """
    if max_rank < 1:
        raise ValueError(f"max_rank must be at least 1, got {max_rank}")
    read_source = _Sources(sources or train_docs())
    entries: list[tuple[str, SyntheticExample]] = []
    inputs = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        inputs.append({"path": str(path), "sha256": hashlib.sha256(text.encode()).hexdigest()})
        lines = [line for line in text.split("\n") if line.strip()]
        examples = parse_examples("\n".join(lines), str(path), sources)
        for number, line in enumerate(lines, start=1):
            if "source" not in json.loads(line):
                raise ValueError(
                    f"{path}:{number}: not packed; run `longscan synth-pack` first, so the "
                    "example names its source file"
                )
        entries += zip(lines, examples, strict=True)
    kept_lines: list[str] = []
    kept: Counter[str] = Counter()
    dropped: dict[str, Counter[str]] = {}
    ranks: dict[str, int] = {}
    for line, example in track(entries, "asking the reader", enabled=progress):
        verdict = agreement(example, read_source(example.source_id), judge)
        ranks[example.id] = verdict.rank
        if 1 <= verdict.rank <= max_rank:
            kept_lines.append(line)
            kept[example.strategy] += 1
            continue
        reason = NOTHING_LABELLED if verdict.rank == 0 else DISAGREES
        dropped.setdefault(example.strategy, Counter())[reason] += 1
    report = FilterReport(
        max_rank=max_rank,
        reader_sha256=judge.digest,
        inputs=inputs,
        kept=dict(kept),
        dropped={strategy: dict(reasons) for strategy, reasons in dropped.items()},
        ranks=ranks,
    )
    return kept_lines, report


def write_kept(out: Path, kept: Sequence[str], report: FilterReport) -> None:
    """The ``kept`` lines into ``out``, and the report beside it in ``OUT.report.json``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    out.with_name(out.name + ".report.json").write_text(report.to_json() + "\n", "utf-8")
