"""The filings bars in one run: scanner checkpoints beside the shipped scanner and the chunk
baselines on Loong and L-Eval financial, then the prose rows beside the shipped scanner.

    python benchmarks/filings_bars.py --out runs/bars -c runs/a-s0 -c runs/a-s1 -c runs/a-s2
        [--part filings|prose|instructed|all]

Every set is one ``run_benchmark`` call, so every retriever reads the same items:

- filings: Loong (20 items) with table context and plain, L-Eval ``financial_qa`` with table
  context, ``ahit`` at 100 / 300 / 1,000 / 2,000 words; the scanners beside ``bm25-chunk``,
  ``dense-chunk`` and ``hybrid-chunk``.
- prose: HotpotQA in 20k-word documents (100 items), MuSiQue in 20k (38), SQuAD in 50k (200),
  the scanners only (the baselines' rows are in BENCHMARKS.md).
- instructed: the HotpotQA and MuSiQue rows asked plain and after ``HELD_OUT_INSTRUCTION``
  (the scanners only), and the questions the instruction costs each one.

It prints each table and the checks the issue states: on the filings sets, whether each
checkpoint is at or above the best chunk baseline at 300, 1,000 and 2,000 words (and on
Loong at 1.5 times the scanner shipped when the issue was filed at 1,000); on the prose
rows, how many questions each checkpoint gains or loses against the shipped scanner, beside
the shipped recipe's own seed spread (``SEED_SPREAD``). Every table goes to ``OUT`` too, as
``longscan eval`` writes it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from longscan.bench.runner import run_benchmark
from longscan.evaluation.report import markdown_table

CHUNK_BASELINES = ("bm25-chunk", "dense-chunk", "hybrid-chunk")
BUDGETS = (100, 300, 1_000, 2_000)
BAR_BUDGETS = (300, 1_000, 2_000)
# The second Loong bar: 1.5 times the Loong ahit@1000 of the scanner the filings work
# started from (0.05 on the development split)
FILED_LOONG_AT_1000 = 0.05
# (name, benchmark, table context); the two filings sets, Loong read both ways
FILINGS = (
    ("loong-context", "loong", True),
    ("loong-plain", "loong", False),
    ("leval-financial-context", "leval-financial", True),
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


def filings(checkpoints: list[str], out: Path) -> None:
    """The filings sets, and per checkpoint whether it reaches the best chunk baseline."""
    scanners = ["scanner", *(f"scanner:{path}" for path in checkpoints)]
    measures = [f"ahit@{b}" for b in BUDGETS]
    for name, benchmark, context in FILINGS:
        run = run_benchmark(
            benchmark,
            [*scanners, *CHUNK_BASELINES],
            out_dir=out / name,
            table_context=context,
        )
        rows = {result.retriever: result.overall for result in run.results}
        print(f"\n{name}, ahit\n{markdown_table(run.results, measures)}")
        for scanner in scanners:
            short = [
                f"@{b}: {rows[scanner][f'ahit@{b}']:.3f} < {best:.3f}"
                for b in BAR_BUDGETS
                if rows[scanner][f"ahit@{b}"]
                < (best := max(rows[c][f"ahit@{b}"] for c in CHUNK_BASELINES))
            ]
            if benchmark == "loong" and rows[scanner]["ahit@1000"] < 1.5 * FILED_LOONG_AT_1000:
                short.append(f"@1000 under 1.5 x {FILED_LOONG_AT_1000} (the scanner at filing)")
            print(f"  {scanner}: " + ("meets the bar" if not short
                                       else "misses it " + ", ".join(short)))  # fmt: skip


def prose(checkpoints: list[str], out: Path) -> None:
    """The prose rows, and each checkpoint's change in questions against the shipped one."""
    scanners = ["scanner", *(f"scanner:{path}" for path in checkpoints)]
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


def instructed(checkpoints: list[str], out: Path) -> None:
    """The prose rows asked plain and after ``HELD_OUT_INSTRUCTION``: how much each scanner
    loses when its query carries an instruction none of them was trained on."""
    scanners = ["scanner", *(f"scanner:{path}" for path in checkpoints)]
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
    parser.add_argument("--out", type=Path, required=True, help="folder for every table")
    parts = ("filings", "prose", "instructed", "all")
    parser.add_argument("--part", choices=parts, default="all")
    args = parser.parse_args()
    if args.part in ("filings", "all"):
        filings(args.checkpoint, args.out)
    if args.part in ("prose", "all"):
        prose(args.checkpoint, args.out)
    if args.part in ("instructed", "all"):
        instructed(args.checkpoint, args.out)


if __name__ == "__main__":
    main()
