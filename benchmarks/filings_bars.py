"""The filings bars in one run: scanner checkpoints beside the shipped scanner and every
baseline on the filings development split, Loong and L-Eval financial, then the prose rows
beside the shipped scanner.

    python benchmarks/filings_bars.py --out runs/bars -c runs/a-s0 -c runs/a-s1 -c runs/a-s2
        [--part filings|prose|instructed|all] [-r RETRIEVER ...]

Every set is one ``run_benchmark`` call, so every retriever reads the same items:

- filings: the filings development split (``longscan.bench.filings``: ``hit`` at 100 / 300 /
  1,000 / 2,000 words, the answer figure as gold, also per phrasing), Loong (20 items) with
  table context and plain, L-Eval ``financial_qa`` with table context (``ahit``, answers
  only), the contract development split (``longscan.bench.contracts``: ``hit``, the answer
  as gold, also per phrasing); the scanners (and ``-r`` retrievers) beside every baseline.
- prose: HotpotQA in 20k-word documents (100 items), MuSiQue in 20k (38), SQuAD in 50k (200),
  the scanners only (the baselines' rows are in BENCHMARKS.md).
- instructed: the HotpotQA and MuSiQue rows asked plain and after ``HELD_OUT_INSTRUCTION``
  (the scanners only), and the questions the instruction costs each one.

It prints each table and the bars: on the filings sets, whether each scanner is at or
above the best baseline at 300, 1,000 and 2,000 words, and how many items short; on the prose
rows, how many questions each checkpoint gains or loses against the shipped scanner, beside
the shipped recipe's own seed spread (``SEED_SPREAD``). Every table goes to ``OUT`` too, as
``longscan eval`` writes it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import result_files

from longscan.bench.runner import run_benchmark
from longscan.evaluation import EvaluationResult
from longscan.evaluation.report import markdown_table
from longscan.retrievers import BASELINES as REGISTERED_BASELINES

BASELINES = tuple(name for name in REGISTERED_BASELINES if name != "random")  # chance aside
BUDGETS = (100, 300, 1_000, 2_000)
# The ways each built split asks its questions (None: every question)
PHRASINGS = {
    "filings": (None, "label", "concept", "paraphrase"),
    "filings-loong": (None, "label", "concept", "paraphrase"),
    "contracts": (None, "written", "reworded"),
}
BAR_BUDGETS = (300, 1_000, 2_000)
# (name, benchmark, table context, measure family): the filings development split and its
# questions over Loong's sample reports (gold spans: hit), Loong read both ways and L-Eval
# financial (answers only: ahit)
FILINGS = (
    ("filings-dev", "filings", True, "hit"),
    ("filings-loong", "filings-loong", True, "hit"),
    ("loong-context", "loong", True, "ahit"),
    ("loong-plain", "loong", False, "ahit"),
    ("leval-financial-context", "leval-financial", True, "ahit"),
    ("contracts-dev", "contracts", True, "hit"),
)
# (benchmark, words, max items, measures): the prose rows BENCHMARKS.md compares
PROSE = (
    ("hotpotqa-long", 20_000, 100, ("hit@100", "FR@100", "FR@300", "nDCG@10")),
    ("musique-long", 20_000, None, ("hit@100", "FR@100", "FR@300", "FR@1000", "FR@2000")),
    ("squad-long", 50_000, 200, ("hit@100", "FR@100", "FR@300", "P@1")),
)
# An instruction written for this benchmark only, in words that neither the training pool
# (``longscan.training.instructions``) nor a benchmark's prompt uses six of in a row
HELD_OUT_INSTRUCTION = (
    "Please go over the pages I have pasted and tell me, using only what they say, the answer "
    "to my question. Mention which page supports it, and admit it if the pages are silent."
)
# The shipped recipe's seed spread (max - min over seeds 0, 1, 2) in whole questions, from
# docs/experiments.md ("The scan alone: the tuned vectors ..."): the prose bar's
# "within one seed's spread". Rows that table lacks are absent (no floor is claimed).
SEED_SPREAD = {
    ("hotpotqa-long", "FR@100"): 3,
    ("hotpotqa-long", "FR@300"): 6,
    ("musique-long", "hit@100"): 2,
    ("musique-long", "FR@100"): 2,
    ("musique-long", "FR@300"): 5,
    ("musique-long", "FR@1000"): 3,
    ("musique-long", "FR@2000"): 0,
    ("squad-long", "hit@100"): 6,
    ("squad-long", "FR@100"): 5,
    ("squad-long", "FR@300"): 1,
}


def filings(scanners: list[str], out: Path) -> list[dict[str, Any]]:
    """The filings sets, and per scanner whether it reaches the best baseline; returns the
    tables a result file keeps: per set, every retriever's measures (per phrasing on the
    built splits) and each scanner's shortfall."""
    tables = []
    for name, benchmark, context, family in FILINGS:
        run = run_benchmark(
            benchmark, [*scanners, *BASELINES], out_dir=out / name, table_context=context
        )
        measures = [f"{family}@{b}" for b in BUDGETS]
        rows = {result.retriever: result.overall for result in run.results}
        print(f"\n{name}, {family}\n{markdown_table(run.results, measures)}")
        items = len(run.results[0].records)
        phrasings = PHRASINGS.get(benchmark, (None,))
        table_rows = [
            [result.retriever, phrasing or "all", *means]
            for result in run.results
            for phrasing in phrasings
            for means in [mean_of(result, measures, phrasing)]
        ]
        columns = ["retriever", "questions asked", "items", *measures]
        tables.append(result_files.table(f"{name} ({items} items)", columns, table_rows))
        print(result_files.markdown(tables[-1], heading=""))
        for scanner in scanners:
            short = []
            for b in BAR_BUDGETS:
                best = max(BASELINES, key=lambda c, b=b: rows[c][f"{family}@{b}"])
                gap = rows[best][f"{family}@{b}"] - rows[scanner][f"{family}@{b}"]
                if gap > 0:
                    short.append(f"@{b}: {round(gap * items)} items under {best}")
            print(f"  {scanner}: " + ("meets the bar" if not short
                                       else "misses it " + ", ".join(short)))  # fmt: skip
    return tables


def mean_of(result: EvaluationResult, measures: list[str], phrasing: str | None) -> list[Any]:
    """The number of items and each measure's mean over the items asked one way (all of
    them for None), to three places."""
    records = [r for r in result.records if phrasing is None or r.item_id.endswith(f":{phrasing}")]
    means = [round(sum(r.scores[m] for r in records) / len(records), 3) for m in measures]
    return [len(records), *means]


def prose(scanners: list[str], out: Path) -> None:
    """The prose rows, and each scanner's change in questions against the shipped one."""
    for benchmark, words, max_items, measures in PROSE:
        run = run_benchmark(
            benchmark, scanners, target_words=words, max_items=max_items, out_dir=out / "prose"
        )
        rows = {result.retriever: result.overall for result in run.results}
        items = len(run.results[0].records)
        print(f"\n{benchmark}, {words:,} words\n{markdown_table(run.results, measures)}")
        for scanner in scanners[1:]:
            changes = []
            for measure in measures:
                difference = rows[scanner][measure] - rows["scanner"][measure]
                if measure.startswith("nDCG"):  # a mean of gains, not a count of questions
                    changes.append(f"{measure} {difference:+.3f}")
                    continue
                change = round(difference * items)
                spread = SEED_SPREAD.get((benchmark, measure))
                floor = "" if spread is None else f" (spread {spread})"
                below = spread is not None and change < -spread
                changes.append(f"{measure} {change:+d}{floor}{' BELOW' if below else ''}")
            print(f"  {scanner}, questions against the shipped scanner: " + ", ".join(changes))


def instructed(scanners: list[str], out: Path) -> None:
    """The prose rows asked plain and after ``HELD_OUT_INSTRUCTION``: how much each scanner
    loses when its query carries an instruction none of them was trained on."""
    for benchmark, words, max_items, measures in PROSE[:2]:  # the multi-hop rows
        rows = {}
        for asked in (None, HELD_OUT_INSTRUCTION):
            run = run_benchmark(
                benchmark,
                scanners,
                target_words=words,
                max_items=max_items,
                out_dir=out / ("instructed" if asked else "plain"),
                instruction=asked,
            )
            rows[asked] = {result.retriever: result.overall for result in run.results}
            items = len(run.results[0].records)
            how = "after the held-out instruction" if asked else "plain"
            print(f"\n{benchmark}, {words:,} words, {how}\n{markdown_table(run.results, measures)}")
        plain, asked = rows[None], rows[HELD_OUT_INSTRUCTION]
        for scanner in scanners:
            changes = [
                f"{m} {round((asked[scanner][m] - plain[scanner][m]) * items):+d}"
                for m in measures
                if not m.startswith("nDCG")
            ]
            print(f"  {scanner}, questions the instruction costs: " + ", ".join(changes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--checkpoint", action="append", default=[], help="repeatable")
    parser.add_argument(
        "-r", "--retriever", action="append", default=[], help="another retriever (repeatable)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for every table")
    parts = ("filings", "prose", "instructed", "all")
    parser.add_argument("--part", choices=parts, default="all")
    parser.add_argument(
        "--save", default=None, help="Write the filings tables to benchmarks/results/NAME.json."
    )
    args = parser.parse_args()
    scanners = ["scanner", *(f"scanner:{path}" for path in args.checkpoint), *args.retriever]
    if args.part in ("filings", "all"):
        tables = filings(scanners, args.out)
        if args.save:
            print(f"saved {result_files.save(args.save, vars(args), tables)}")
    if args.part in ("prose", "all"):
        prose(scanners, args.out)
    if args.part in ("instructed", "all"):
        instructed(scanners, args.out)


if __name__ == "__main__":
    main()
