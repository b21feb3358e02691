"""How filings are cut into units, and whether table context helps the readers read rows.

    python benchmarks/tables.py [--data-dir ../shared/data] [--probes 300] [--seed 0]
        [--against REV] [--title-lines 0,1,2,4]

Part 1 counts, per folder, the units the segmenter makes: terse lines (12 words or fewer),
table rows (``longscan.tables.is_row``), rows that are a paragraph of their own (so they had
no paragraph context before), rows that now find a title, header or group label, and units
holding a line break.

Part 2 is a probe of row reading built from the training filings (never from ``corpus/``).
It takes rows whose label (the words before the first figure, such as "Services") occurs in
two or more row groups of the same filing ("Net sales:" and "Cost of sales:"). The question is
"What was the <group> for <label>?". The candidates are every row of that filing with that
label. Top-1 is counted for the cross-encoder with each row read alone and with its table
context (``sentence_in_context``), and for the scanner's sentence vectors (the stock int8
encoder, before any adapter; cosine to the question's vector) read plainly and with ``+rows``.
The questions come from a template, so this is a diagnostic of one skill, not a benchmark of
answers.

Part 3 (with ``--against`` or ``--title-lines``) reads the same probes with the stock
encoder's ``+rows`` vectors, each row given the context that another set of table rules finds:
the rules at a git revision (``tables.py`` as it was there), or today's with another title
block size (``TITLE_LINES``). The probes name a row's group, not its table's title, so a
longer title block can only dilute them here.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from longscan import tables
from longscan.documents import Document
from longscan.encoders.contextual import TABLE_CONTEXT_SUFFIX, ContextualSentenceEncoder
from longscan.progress import track
from longscan.readers.files import read_file
from longscan.rerankers.cross_encoder import get_reranker
from longscan.tables import is_row, row_context, row_label

STOCK_ENCODER = "all-MiniLM-L6-v2+int8/ctx128"  # the scanner's vectors before any adapter
FOLDERS = ("train-docs/sec-full-filings", "train-docs/cuad", "corpus/loong-docs/financial")


def units_table(data_dir: Path) -> None:
    print("| folder | files | units | terse (≤ 12 words) | table rows | rows alone in their "
          "paragraph | rows with context | units with a line break |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for folder in FOLDERS:
        files = sorted((data_dir / folder).glob("*.txt"))
        count: Counter[str] = Counter()
        for path in track(files, folder):
            document = read_file(path)
            texts = document.sentence_texts()
            sizes = np.bincount(document.sentence_paragraph)
            rows = [i for i, text in enumerate(texts) if is_row(text)]
            count["units"] += len(texts)
            count["terse"] += sum(len(text.split()) <= 12 for text in texts)
            count["rows"] += len(rows)
            count["alone"] += sum(int(sizes[document.sentence_paragraph[i]] == 1) for i in rows)
            count["context"] += len(row_context(document))
            count["breaks"] += sum("\n" in text for text in texts)
        units, rows = count["units"], max(count["rows"], 1)
        print(
            f"| {folder} | {len(files)} | {units:,} | {count['terse'] / units:.1%} "
            f"| {count['rows']:,} ({count['rows'] / units:.1%}) | {count['alone'] / rows:.1%} "
            f"| {count['context'] / rows:.1%} | {count['breaks'] / units:.1%} |"
        )


def probes(document: Document) -> list[tuple[str, list[int], int]]:
    """(question, candidate rows, the right row) for labels found under two or more groups."""
    texts = document.sentence_texts()
    by_label: dict[str, list[tuple[int, str]]] = {}
    for row, lines in row_context(document).items():
        group = texts[lines[-1]].rstrip()
        label = row_label(texts[row])
        if group.endswith(":") and 1 <= len(label.split()) <= 6:
            by_label.setdefault(label, []).append((row, group[:-1].strip()))
    found = []
    for label, rows in by_label.items():
        groups = Counter(group.lower() for _, group in rows)
        if len(groups) < 2:
            continue
        candidates = [row for row, _ in rows]
        for row, group in rows:
            if groups[group.lower()] == 1:  # the question names exactly one of the rows
                found.append((f"What was the {group.lower()} for {label}?", candidates, row))
    return found


Rule = Callable[[Document], dict[int, tuple[int, ...]]]


def chosen_probes(data_dir: Path, limit: int, seed: int) -> tuple[list, int, int]:
    """A seeded sample of the probes of every training filing; the filings and probes."""
    files = sorted((data_dir / "train-docs" / "sec-full-filings").glob("*.txt"))
    every = []
    for path in track(files, "probes"):
        document = read_file(path)
        every.extend((document, *probe) for probe in probes(document))
    return random.Random(seed).sample(every, min(limit, len(every))), len(files), len(every)


def row_reading(chosen: list, files: int, every: int) -> None:
    reranker = get_reranker()
    right = Counter()
    for document, question, candidates, answer in track(chosen, "reading"):
        texts = document.sentence_texts()
        for name, passages in (
            ("alone", [texts[i] for i in candidates]),
            ("with table context", [reranker.passage(document, i) for i in candidates]),
        ):
            scores = reranker.score(question, passages)
            right[name] += candidates[int(np.argmax(scores))] == answer
    for name in (STOCK_ENCODER, STOCK_ENCODER + TABLE_CONTEXT_SUFFIX):
        right[name] = vector_reading(ContextualSentenceEncoder.from_name(name), chosen)
    sizes = [len(c) for _, _, c, _ in chosen]
    chance = np.mean([1 / size for size in sizes])
    print(
        f"\n{len(chosen)} probes from {files} filings (of {every}), "
        f"{np.mean(sizes):.1f} candidate rows each (chance {chance:.2f})"
    )
    print("\n| reader | row read | top-1 right |\n|---|---|---:|")
    for name, count in right.items():
        reader = "sentence vectors" if "/ctx" in name else "cross-encoder"
        print(f"| {reader} | {name} | {count / len(chosen):.3f} ({count} of {len(chosen)}) |")


def vector_reading(
    encoder: ContextualSentenceEncoder, chosen: list, rule: Rule | None = None
) -> int:
    """Probes whose right row has the sentence vector closest to the question's; with
    ``rule``, each row reads the context that ``rule`` finds instead of today's rules'."""
    vectors: dict[str, np.ndarray] = {}
    right = 0
    for document, question, candidates, answer in track(chosen, encoder.name):
        if document.id not in vectors:
            if rule is not None:
                document = Document(document.id, document.text)
                document.__dict__["row_context"] = rule(document)  # the cached property
            vectors[document.id] = encoder.encode_document(document)
        scores = vectors[document.id][candidates] @ encoder.encoder.encode([question])[0]
        right += candidates[int(np.argmax(scores))] == answer
    return right


def rules_at(revision: str) -> Rule:
    """``row_context`` of ``tables.py`` as it was at a git revision."""
    source = subprocess.run(
        ["git", "show", f"{revision}:src/longscan/tables.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(f"tables_at_{revision}")
    exec(compile(source, f"{revision}:tables.py", "exec"), module.__dict__)  # noqa: S102
    return module.row_context


def with_title_lines(lines: int) -> Rule:
    """Today's ``row_context`` with a title block of ``lines`` labels."""

    def rule(document: Document) -> dict[int, tuple[int, ...]]:
        default = tables.TITLE_LINES
        tables.TITLE_LINES = lines
        try:
            return tables.row_context.__wrapped__(document)  # not the per-document memo
        finally:
            tables.TITLE_LINES = default

    return rule


def rule_reading(chosen: list, against: list[str], title_lines: list[int]) -> None:
    encoder = ContextualSentenceEncoder.from_name(STOCK_ENCODER + TABLE_CONTEXT_SUFFIX)
    readers: dict[str, Rule | None] = {f"today's (TITLE_LINES={tables.TITLE_LINES})": None}
    readers |= {f"at {revision}": rules_at(revision) for revision in against}
    readers |= {f"today's, TITLE_LINES={n}": with_title_lines(n) for n in title_lines}
    print(f"\n| `{encoder.name}`, rows read with the rules | top-1 right |\n|---|---:|")
    for name, rule in readers.items():
        right = vector_reading(encoder, chosen, rule)
        print(f"| {name} | {right / len(chosen):.3f} ({right} of {len(chosen)}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", action="append", default=[], help="git revision")
    parser.add_argument("--title-lines", default="", help="comma-separated title block sizes")
    parser.add_argument("--only-rules", action="store_true", help="part 3 alone")
    args = parser.parse_args()
    sizes = [int(n) for n in args.title_lines.split(",") if n]
    if not args.only_rules:
        units_table(args.data_dir)
    chosen, files, every = chosen_probes(args.data_dir, args.probes, args.seed)
    if not args.only_rules:
        row_reading(chosen, files, every)
    if args.against or sizes:
        rule_reading(chosen, args.against, sizes)


if __name__ == "__main__":
    main()
