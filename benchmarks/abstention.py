"""Abstention: when should `ask` say "no evidence found"? Each development question is asked
of a document that holds its gold (answerable) and of a development document built without
it (unanswerable: no gold sentence in it), at each of several lengths. Two signals are
measured on the same pairs: the scanner's best score, and the re-scorer's judgement (the
cross-encoder's best logit over the sentences of the scanner's five best, what `ask` uses).

Each threshold is chosen on one half of the questions (the highest that still answers
`--keep` of the answerable ones there) and measured on the other half, then the other way
round; the judgement's threshold to ship is the mean of the two. The shipped threshold
(`abstain_below` of the packaged re-scorer) is measured on every question too, so a new
scanner shows whether `ask` still abstains where it should. `--write DIR` records the mean
in a re-scorer adapter's config.json (`abstain_below`); `--pairs FILE` keeps every signal
read, and `--from-pairs FILE` measures them again without reading anything.

python benchmarks/abstention.py --own 200 --benchmarks squad-long,hotpotqa-long \
    --words 2000,20000 --questions 60 --keep 1.0 --write src/longscan/checkpoints/reranker-minilm

`--own N` adds the short-document case: N development SQuAD questions, each asked of its own
paragraph and of its own article (answerable), and of another development article that
does not hold its answer (unanswerable; the same one for both rows). Their false
abstentions are the ones a user of a short document meets first.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import result_files

from longscan.bench.builders import squad_articles
from longscan.bench.catalogue import build_benchmark
from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE
from longscan.items import QAItem
from longscan.progress import track
from longscan.rerankers.abstention import JUDGED_SPANS, abstain_below, best_judgement
from longscan.retrievers import get_retriever
from longscan.retrievers.base import Retriever

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


def own_squad_questions(questions: int) -> list[tuple[str, Document, Document, Document]]:
    """``questions`` development SQuAD questions, each with its own paragraph, its own
    article (title line, then every paragraph) and another development article that does
    not hold its answer."""
    articles = squad_articles("dev")
    documents = [
        Document(f"article-{n}", "\n\n".join([a.heading, *(p.context for p in a.paragraphs)]))
        for n, a in enumerate(articles)
    ]
    asked = [(n, p, q) for n, a in enumerate(articles) for p in a.paragraphs for q in p.questions]
    rng = np.random.default_rng(0)
    chosen = [asked[i] for i in sorted(rng.choice(len(asked), questions, replace=False))]
    return [
        (
            question.question,
            Document("p", paragraph.context),
            documents[n],
            foreign(documents, n, question.answers[0][0]),
        )
        for n, paragraph, question in chosen
    ]


def own_squad_rows(retriever: Retriever, questions: int) -> dict[str, list]:
    """The signal pairs of ``own_squad_questions``: each question asked of its paragraph
    (row "paragraph") and of its article (row "article"), both beside the same question
    asked of the foreign article, read once."""
    rows: dict[str, list] = {"squad, own paragraph": [], "squad, own article": []}
    for question, paragraph, article, other in track(
        own_squad_questions(questions), "own paragraph and article"
    ):
        unanswerable = signals(retriever, question, [other])
        rows["squad, own paragraph"].append(
            (signals(retriever, question, [paragraph]), unanswerable)
        )
        rows["squad, own article"].append((signals(retriever, question, [article]), unanswerable))
    return rows


def foreign(documents: list[Document], own: int, answer: str) -> Document:
    """The next document after ``documents[own]`` whose text does not hold ``answer`` as a
    word; else the next one (a short answer such as "19" is in every article, but another
    article is about another subject)."""
    others = documents[own + 1 :] + documents[:own]
    word = re.compile(rf"\b{re.escape(answer)}\b")
    return next((d for d in others if not word.search(d.text)), others[0])


def signals(retriever: Retriever, question: str, documents: list[Document]) -> tuple[float, float]:
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


def print_measured(
    rows: dict[str, list], half: int | None, signal: int, threshold: float, title: str
) -> dict[str, Any]:
    """The table of ``threshold`` on ``signal`` over one half of every row (0: the even
    questions, 1: the odd ones; None: both), printed and returned."""
    columns = ["questions", "abstaining: precision", "recall", "answerable answered"]
    chosen = {n: p if half is None else p[half::2] for n, p in rows.items()}
    every = [p for pairs in chosen.values() for p in pairs]
    lines = []
    for name, pairs in [*chosen.items(), ("all", every)]:
        m = measure(*split(pairs, signal), threshold)
        lines.append([f"{name} ({len(pairs)})", round(m["precision"], 3), round(m["recall"], 3)])
        lines[-1].append(round(m["answerable_kept"], 3))
    found = result_files.table(title, columns, lines)
    print(result_files.markdown(found) + "\n")
    return found


def two_folds(
    rows: dict[str, list], signal: int, label: str, keep: float
) -> tuple[float, list[dict[str, Any]]]:
    """A threshold chosen on each half and measured on the other; returns their mean, the
    value to ship (the lowest answerable judgement of 320 questions is an extreme that the
    other half moves by tenths of a logit), and the two tables."""
    chosen, tables = [], []
    for half in (0, 1):
        pairs = [p for every in rows.values() for p in every[half::2]]
        threshold = choose(*split(pairs, signal), keep=keep)
        chosen.append(threshold)
        title = f"{label}: threshold {threshold:.4f}, chosen on half {half}, measured on the other"
        tables.append(print_measured(rows, 1 - half, signal, threshold, title))
    return float(np.mean(chosen)), tables


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
    parser.add_argument(
        "--own", type=int, default=0, help="SQuAD questions asked of their own paragraph/article."
    )
    parser.add_argument("--pairs", type=Path, help="Write every row's signal pairs here (JSON).")
    parser.add_argument("--from-pairs", type=Path, help="Read the pairs of an earlier --pairs.")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    args = parser.parse_args()
    retriever = get_retriever(args.retriever)
    # (answerable, unanswerable) signal pairs per row: [signal][pair]
    rows: dict[str, list[tuple[tuple[float, float], tuple[float, float]]]] = {}
    if args.from_pairs is not None:
        rows = json.loads(args.from_pairs.read_text(encoding="utf-8"))
    elif args.own:
        rows.update(own_squad_rows(retriever, args.own))
    for words in (int(w) for w in args.words.split(",") if w and args.from_pairs is None):
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
    if args.pairs is not None:
        args.pairs.write_text(json.dumps(rows), encoding="utf-8")
    print(f"retriever {args.retriever}; each threshold is chosen on half of the questions "
          f"(answering {args.keep:.0%} of them) and measured on the other half; each question "
          "is asked of its own document and of one built without its gold\n")  # fmt: skip
    folds = [two_folds(rows, signal, label, args.keep) for signal, label in enumerate(SIGNALS)]
    thresholds = [threshold for threshold, _ in folds]
    tables = [table for _, two in folds for table in two]
    title = f"{SIGNALS[1]}: the mean of its two folds, {thresholds[1]:.4f}, on every question"
    tables.append(print_measured(rows, None, 1, thresholds[1], title))
    shipped = abstain_below()
    if shipped is not None:  # what `ask` does today, over today's retriever
        title = f"{SIGNALS[1]}: the shipped threshold (abstain_below) {shipped:.4f}"
        tables.append(print_measured(rows, None, 1, shipped, title))
    if args.save:
        print(f"saved {result_files.save(args.save, vars(args), tables)}")
    if args.write is not None:
        path = args.write / CONFIG_FILE
        config = json.loads(path.read_text(encoding="utf-8"))
        config["abstain_below"] = thresholds[1]
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(f"wrote abstain_below = {thresholds[1]:.4f} into {path}")


if __name__ == "__main__":
    main()
