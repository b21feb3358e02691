"""Abstention: when should `ask` say "no evidence found"? The scanner's best score for a
question over a document that holds its gold (answerable) and over a development document
built without it (unanswerable: no gold sentence in it), on the development split.

The threshold is chosen on half of the questions (the highest that still answers
`--keep` of the answerable ones) and measured on the other half, never on the questions it
was chosen on.
`--write DIR` records it in a scanner checkpoint's config.json (`abstain_below`).

python benchmarks/abstention.py --benchmarks squad-long,hotpotqa-long --questions 60
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from longscan.bench.builders import build_benchmark
from longscan.bench.items import QAItem
from longscan.documents import Document
from longscan.progress import track
from longscan.retrievers import get_retriever
from longscan.scanning.checkpoint import CONFIG_FILE


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


def best_score(retriever, question: str, documents: list[Document]) -> float:
    return retriever.retrieve(question, documents, top_k=1)[0].score


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", default="squad-long,hotpotqa-long")
    parser.add_argument("--questions", type=int, default=60, help="Per benchmark.")
    parser.add_argument("--words", type=int, default=20_000)
    parser.add_argument("--retriever", default="scanner")
    parser.add_argument(
        "--keep",
        type=float,
        default=0.95,
        help="Share of answerable questions that must still be answered.",
    )
    parser.add_argument("--write", type=Path, help="A checkpoint folder to record it in.")
    args = parser.parse_args()
    retriever = get_retriever(args.retriever)
    scores: dict[str, list[tuple[float, float]]] = {}
    for name in args.benchmarks.split(","):
        items = build_benchmark(name, "dev", args.words, max_items=args.questions, seed=0)
        pool = list({d.id: d for item in items for d in item.documents}.values())
        pairs = []
        for item in track(items, name):
            other = without_gold(item, pool)
            if other is not None:
                pairs.append((best_score(retriever, item.query, list(item.documents)),
                              best_score(retriever, item.query, [other])))  # fmt: skip
        scores[name] = pairs
    calibrate = [p for pairs in scores.values() for p in pairs[0::2]]
    held_out = [p for pairs in scores.values() for p in pairs[1::2]]
    threshold = choose(*map(np.array, zip(*calibrate, strict=True)), keep=args.keep)
    print(f"retriever {args.retriever}; threshold {threshold:.4f} chosen on {len(calibrate)} "
          f"questions, measured on {len(held_out)} others (each asked of its own document "
          "and of one built without its gold)\n")  # fmt: skip
    print("| questions | abstaining: precision | recall | answerable questions answered |")
    print("|---|---:|---:|---:|")
    rows = [(name, pairs[1::2]) for name, pairs in scores.items()] + [("all", held_out)]
    for name, pairs in rows:
        answerable, unanswerable = map(np.array, zip(*pairs, strict=True))
        m = measure(answerable, unanswerable, threshold)
        print(f"| {name} (held out, {len(pairs)}) | {m['precision']:.3f} | {m['recall']:.3f} | "
              f"{m['answerable_kept']:.3f} |")  # fmt: skip
    if args.write is not None:
        path = args.write / CONFIG_FILE
        config = json.loads(path.read_text(encoding="utf-8"))
        config["abstain_below"] = threshold
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote abstain_below = {threshold:.4f} into {path}")


if __name__ == "__main__":
    main()
