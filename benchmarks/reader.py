"""The extractive reader on the development sets, given the gold evidence.

    python benchmarks/reader.py [--adapter DIR] [--squad N] [--hotpotqa N] [--musique N] \
        [--threads N] [--threshold T] [--save NAME]

Every question is read with its gold sentences as evidence (SQuAD: the answer sentence and
its neighbours; HotpotQA: the supporting sentences; MuSiQue: the sentences of the supporting
paragraphs, as the dev builders give them), and ``squad-no-answer`` reads the SQuAD
questions over three sentences of their articles that hold no answer, where declining is
right. Prints EM and token F1 (SQuAD normalisation), the same over the questions whose
answer occurs in their evidence (HotpotQA's yes/no answers never do), the share declined,
seconds per question, and the time to read 300 words of evidence (median of 20 reads);
``--save`` writes them to ``benchmarks/results/NAME.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import result_files

from longscan.answering.extractive import PACKAGED, ExtractiveReader
from longscan.documents import Evidence
from longscan.training.reader import (
    DEV_QUESTIONS,
    DevQuestion,
    development_questions,
    score_reader,
    score_table,
)

TIMED_WORDS = 300
TIMED_READS = 20


def evidence_of_words(questions: list[DevQuestion], words: int) -> list[Evidence]:
    """Evidence items of the development questions, in order, until ``words`` words."""
    chosen: list[Evidence] = []
    total = 0
    for question in questions:
        for item in question.evidence:
            if total >= words:
                return chosen
            chosen.append(item)
            total += len(item.text.split())
    return chosen


def read_seconds(reader: ExtractiveReader, question: str, evidence: list[Evidence]) -> float:
    """The median wall time of reading ``evidence`` for ``question``, after one warm-up."""
    reader.read(question, evidence)
    times = []
    for _ in range(TIMED_READS):
        started = time.perf_counter()
        reader.read(question, evidence)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", type=Path, default=PACKAGED, help="reader adapter folder")
    for name, default in DEV_QUESTIONS.items():
        parser.add_argument(f"--{name}", type=int, default=default, help=f"{name} questions")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads")
    parser.add_argument("--threshold", type=float, default=0.0, help="least span score")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    args = parser.parse_args()
    reader = ExtractiveReader(args.adapter, args.threads, args.threshold)
    sets = development_questions({name: getattr(args, name) for name in DEV_QUESTIONS})
    scores = {name: score_reader(reader.read, questions) for name, questions in sets.items()}
    print(score_table(scores))
    evidence = evidence_of_words(sets["squad"], TIMED_WORDS)
    words = sum(len(item.text.split()) for item in evidence)
    seconds = read_seconds(reader, sets["squad"][0].question, evidence)
    print(f"\nreading {words} words of evidence ({len(evidence)} items): {seconds:.3f} s")
    if args.save:
        columns = ["set", "questions", "answer in evidence", "EM", "F1", "declined"]
        columns += ["s/question"]
        rows = [
            [name, row["questions"], row["extractable"], round(row["em"], 3)]
            + [round(row["f1"], 3), round(row["declined"], 2)]
            + [round(row["seconds_per_question"], 3)]
            for name, row in scores.items()
        ]
        title = f"Gold evidence given, threshold {args.threshold:g}"
        timed = [[words, len(evidence), round(seconds, 3)]]
        tables = [result_files.table(title, columns, rows)]
        tables.append(result_files.table("Time to read", ["words", "items", "median s"], timed))
        print(f"saved {result_files.save(args.save, vars(args), tables)}")


if __name__ == "__main__":
    main()
