"""The scanner on one short document: does its best sentence hold the answer, wherever the
answer sentence stands?

    python benchmarks/short_documents.py [-r scanner -r scanner:DIR -r bm25-sentence ...]
        [--items 400] [--data-dir ../shared/data]

Every development benchmark builds documents of 20k words and more, where a document's first
sentence is almost never the one asked about. A user's document is often one paragraph, and
its first sentence is where the answer is as often as anywhere. Each item here is one SQuAD
development paragraph alone (its first question), and an item is hit when the retriever's top
sentence overlaps the answer. Hits are counted apart for answers in the first sentence and in
any later one, so a scanner that learned to distrust the start of a document shows it.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from longscan.bench.builders import squad_articles
from longscan.documents import Document
from longscan.retrievers.registry import get_retriever


def items(count: int, data_dir: str | None) -> list[tuple[str, Document, tuple[int, int], bool]]:
    """(question, paragraph as a document, answer span, answer in the first sentence)."""
    found = []
    for article in squad_articles("dev", data_dir=data_dir):
        for number, paragraph in enumerate(article.paragraphs):
            if len(found) == count:
                return found
            if not paragraph.questions:
                continue
            question = paragraph.questions[0]
            text, start = question.answers[0]
            document = Document(f"{article.title}/{number}", paragraph.context)
            sentence = int(np.searchsorted(document.sentences[:, 1], start, side="right"))
            found.append((question.question, document, (start, start + len(text)), sentence == 0))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-r", "--retriever", action="append", help="repeatable")
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    chosen = items(args.items, args.data_dir)
    first = sum(is_first for *_, is_first in chosen)
    later = len(chosen) - first
    print(f"{len(chosen)} paragraphs: the answer in the first sentence {first}, later {later}")
    print(f"{'retriever':40} {'hit@1, first':>14} {'hit@1, later':>14}")
    for name in args.retriever or ["scanner", "bm25-sentence"]:
        retriever = get_retriever(name)
        hits: Counter[bool] = Counter()
        for question, document, (start, end), is_first in chosen:
            top = retriever.retrieve(question, [document], top_k=1)[0]
            hits[is_first] += top.start < end and start < top.end
        print(
            f"{name[-40:]:40} {hits[True] / max(first, 1):14.3f} "
            f"{hits[False] / max(later, 1):14.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
