"""How many items of an answer-only benchmark any evidence could ever hit (``ahit``'s ceiling).

    python benchmarks/answer_reach.py [-b loong -b leval-financial] [--data-dir ../shared/data]
        [-r scanner -r dense-chunk ...] [--budgets 300,1000,2000]

``ahit@B`` counts an item when the normalised reference answer occurs in one budgeted unit.
Where an answer is a JSON list or table, a sentence or a free-form paragraph, no unit of any
document holds it, and no retriever can hit the item at any budget. Per item this prints the
number of units that hold the answer, and the first of them, so a reader sees what a hit
means there (a figure in a table row, or a company's name in a report's heading). With
``-r``, each retriever ranks the reachable items' documents and the unit that hits at each
budget is printed, so a hit can be read, with the words read before the first unit that
holds the answer (how far a budget is from a hit). ``--table-context`` reads each table row
after its context units and counts their words, as ``longscan eval --table-context`` does.
``--question-only`` ranks with the item's question alone, without the instruction its query
begins with (Loong's "We kindly ask you to review the financial statements ..."), as a user
who types only the question asks: a diagnostic of how much the instruction moves a reader.
"""

from __future__ import annotations

import argparse

from longscan.bench.catalogue import build_benchmark
from longscan.documents import Evidence
from longscan.evaluation.budgets import budget_evidence
from longscan.evaluation.gold import contains_answer
from longscan.items import QAItem
from longscan.retrievers.registry import get_retriever
from longscan.segment import count_words
from longscan.selection import with_table_context


def reach(benchmark: str, data_dir: str | None) -> list[QAItem]:
    """Print each item's units that hold its answer; the items with any."""
    items = build_benchmark(benchmark, data_dir=data_dir)
    reachable: list[QAItem] = []
    print(f"\n{benchmark}: {len(items)} items")
    for item in items:
        holding = [
            (document.id, text)
            for document in item.documents
            for text in document.sentence_texts()
            if contains_answer(text, item.answers)
        ]
        if holding:
            reachable.append(item)
        first = f"{holding[0][0][:40]}: {holding[0][1][:60]!r}" if holding else "-"
        answer = item.answers[0].replace("\n", " ")[:40]
        print(f"  {item.id[:24]:24} {answer!r:44} units {len(holding):3}  {first}")
    print(f"{benchmark}: {len(reachable)} of {len(items)} items can be hit at all")
    return reachable


def words_before_answer(ranked: list[Evidence], answers: list[str]) -> int | None:
    """Words of the units ranked before the first that holds an answer; None if none does."""
    words = 0
    for unit in ranked:
        if contains_answer(unit.text, answers):
            return words
        words += count_words(unit.text)
    return None


def question_of(item: QAItem) -> str:
    """The item's query without the instruction it begins with (the query itself if none)."""
    instruction = str(item.metadata.get("instruction", ""))
    if not instruction or not item.query.startswith(instruction):
        return item.query
    return item.query.removeprefix(instruction).strip() or item.query


def hits(
    items: list[QAItem],
    retriever: str,
    budgets: list[int],
    table_context: bool,
    question_only: bool = False,
) -> None:
    """Per reachable item: the words read before the answer, and per budget the first
    budgeted unit that holds it."""
    ranker = get_retriever(retriever)
    found = dict.fromkeys(budgets, 0)
    for item in items:
        query = question_of(item) if question_only else item.query
        ranked = ranker.retrieve(query, item.documents)
        if table_context:
            ranked = with_table_context(ranked, item.documents)
        before = words_before_answer(ranked, item.answers)
        shown = "-" if before is None else f"{before:,}"
        print(f"  {retriever:14} {item.id[:12]} the answer after {shown} words")
        for budget in budgets:
            unit = next(
                (
                    u
                    for u in budget_evidence(ranked, budget)
                    if contains_answer(u.text, item.answers)
                ),
                None,
            )
            found[budget] += unit is not None
            text = "-" if unit is None else f"{unit.doc_id[:30]}: {unit.text[:70]!r}"
            print(f"  {retriever:14} {item.id[:12]} @{budget:<5} {text}")
    print(f"  {retriever}: " + ", ".join(f"{found[b]} hit @{b}" for b in budgets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-b", "--benchmark", action="append", help="repeatable")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("-r", "--retriever", action="append", default=[], help="repeatable")
    parser.add_argument("--budgets", default="300,1000,2000", help="words, comma-separated")
    parser.add_argument(
        "--table-context", action="store_true", help="count table rows' context units"
    )
    parser.add_argument(
        "--question-only", action="store_true", help="rank with the question, no instruction"
    )
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    for benchmark in args.benchmark or ["loong", "leval-financial"]:
        reachable = reach(benchmark, args.data_dir)
        for retriever in args.retriever:
            hits(reachable, retriever, budgets, args.table_context, args.question_only)


if __name__ == "__main__":
    main()
