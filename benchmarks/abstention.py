"""Abstention: when should `ask` say "no evidence found"? Each development question is asked
of a document that holds its gold (answerable) and of a development document built without
it (unanswerable: no gold sentence in it), at each of several lengths. Two signals are
measured on the same pairs: the scanner's best score, and the re-scorer's judgement (the
cross-encoder's best logit over the sentences of the scanner's five best, what `ask` uses).

Each threshold is chosen on half of the questions (the highest that still answers `--keep`
of the answerable ones) and measured on the other half, never on the questions it was
chosen on. The shipped threshold (`abstain_below` of the packaged re-scorer) is measured on
the same held-out half, so a new scanner shows whether `ask` still abstains where it should.
`--write DIR` records the judgement's threshold in a re-scorer adapter's config.json
(`abstain_below`).

python benchmarks/abstention.py --benchmarks squad-long,hotpotqa-long --words 2000,20000 \
    --questions 60 --keep 1.0 --write src/longscan/checkpoints/reranker-minilm
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from longscan.bench.builders import build_benchmark
from longscan.bench.items import QAItem
from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE
from longscan.progress import track
from longscan.rerankers.abstention import JUDGED_SPANS, abstain_below, best_judgement
from longscan.retrievers import get_retriever

SIGNALS = ("scanner's best score", "re-scorer's judgement")


def gold_sentences(item: QAItem) -> list[str]:
    """The text of every sentence a gold span touches."""
    by_id = {d.id: d for d in item.documents}
    found = []
    for span in item.gold_spans:
        document = by_id[span.doc_id]
        for start, end in document.sentences.tolist():
            if start < span.end and span.start < end:
                found.append(document.text[start:end])
    return found


def without_gold(item: QAItem, pool: list[Document]) -> Document | None:
    """The first document of ``pool`` that is not the item's and holds none of its gold."""
    own = {d.id for d in item.documents}
    gold = gold_sentences(item)
    return next((d for d in pool if d.id not in own and not any(g in d.text for g in gold)),
                None)  # fmt: skip


def signals(retriever, question: str, documents: list[Document]) -> tuple[float, float]:
    """The scanner's best score and the re-scorer's judgement of the scanner's best spans."""
    evidence = retriever.retrieve(question, documents, top_k=JUDGED_SPANS)
    return evidence[0].score, best_judgement(question, evidence, documents)


def choose(answerable: np.ndarray, unanswerable: np.ndarray, keep: float) -> float:
    """The highest threshold (abstain below it) that still answers at least ``keep`` of the
    answerable questions: a user who asks about what a document holds must almost always
    get evidence, so abstaining is tuned for that first, then for catching the rest."""
    chosen = float("-inf")
    for threshold in np.unique(np.concatenate([answerable, unanswerable])):
        if measure(answerable, unanswerable, float(threshold))["answerable_kept"] >= keep:
            chosen = float(threshold)
    return chosen


def measure(answerable: np.ndarray, unanswerable: np.ndarray, threshold: float) -> dict:
    abstained_right = int((unanswerable < threshold).sum())
    abstained_wrong = int((answerable < threshold).sum())
    precision = abstained_right / max(abstained_right + abstained_wrong, 1)
    recall = abstained_right / max(len(unanswerable), 1)
    return {"precision": precision, "recall": recall,
            "answerable_kept": 1 - abstained_wrong / max(len(answerable), 1)}  # fmt: skip


def split(pairs: list, signal: int) -> tuple[np.ndarray, np.ndarray]:
    """One signal's answerable and unanswerable values over ``pairs``."""
    answerable, unanswerable = (np.array([p[kind][signal] for p in pairs]) for kind in (0, 1))
    return answerable, unanswerable


def print_held_out(rows: dict[str, list], held_out: list, signal: int, threshold: float) -> None:
    """The table of ``threshold`` on ``signal`` over the held-out half of every row."""
    print("| held-out questions | abstaining: precision | recall | answerable answered |")
    print("|---|---:|---:|---:|")
    for name, pairs in [*((n, p[1::2]) for n, p in rows.items()), ("all", held_out)]:
        answerable, unanswerable = split(pairs, signal)
        m = measure(answerable, unanswerable, threshold)
        print(f"| {name} ({len(pairs)}) | {m['precision']:.3f} | {m['recall']:.3f} | "
              f"{m['answerable_kept']:.3f} |")  # fmt: skip
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", default="squad-long,hotpotqa-long")
    parser.add_argument("--questions", type=int, default=60, help="Per benchmark and length.")
    parser.add_argument("--words", default="2000,20000", help="Document lengths, comma-separated.")
    parser.add_argument("--retriever", default="scanner")
    parser.add_argument(
        "--keep",
        type=float,
        default=1.0,
        help="Share of answerable calibration questions that must still be answered.",
    )
    parser.add_argument("--write", type=Path, help="A re-scorer adapter folder to record it in.")
    args = parser.parse_args()
    retriever = get_retriever(args.retriever)
    # (answerable, unanswerable) signal pairs per row: [signal][pair]
    rows: dict[str, list[tuple[tuple[float, float], tuple[float, float]]]] = {}
    for words in (int(w) for w in args.words.split(",")):
        for name in args.benchmarks.split(","):
            items = build_benchmark(name, "dev", words, max_items=args.questions, seed=0)
            pool = list({d.id: d for item in items for d in item.documents}.values())
            pairs = []
            for item in track(items, f"{name} at {words:,} words"):
                other = without_gold(item, pool)
                if other is not None:
                    pairs.append((signals(retriever, item.query, list(item.documents)),
                                  signals(retriever, item.query, [other])))  # fmt: skip
            rows[f"{name}, {words:,} words"] = pairs
    calibrate = [p for pairs in rows.values() for p in pairs[0::2]]
    held_out = [p for pairs in rows.values() for p in pairs[1::2]]
    print(f"retriever {args.retriever}; thresholds chosen on {len(calibrate)} questions "
          f"(answering {args.keep:.0%} of them), measured on {len(held_out)} others, each "
          "asked of its own document and of one built without its gold\n")  # fmt: skip
    thresholds = []
    for signal, label in enumerate(SIGNALS):
        answerable, unanswerable = split(calibrate, signal)
        threshold = choose(answerable, unanswerable, keep=args.keep)
        thresholds.append(threshold)
        print(f"{label}: threshold {threshold:.4f}\n")
        print_held_out(rows, held_out, signal, threshold)
    shipped = abstain_below()
    if shipped is not None:  # what `ask` does today, over today's retriever
        print(f"{SIGNALS[1]}: the shipped threshold (abstain_below) {shipped:.4f}\n")
        print_held_out(rows, held_out, 1, shipped)
    if args.write is not None:
        path = args.write / CONFIG_FILE
        config = json.loads(path.read_text(encoding="utf-8"))
        config["abstain_below"] = thresholds[1]
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(f"wrote abstain_below = {thresholds[1]:.4f} into {path}")


if __name__ == "__main__":
    main()
