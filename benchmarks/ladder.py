"""The EMB-S ladder: build every rung, evaluate every system, print a markdown table.

python benchmarks/ladder.py --per-domain 20 --max-tokens 20000000 --out runs/ladder
python benchmarks/ladder.py --table runs/ladder/ladder.json     # only print the table
python benchmarks/ladder.py --ceiling --per-domain 20 --out runs/ladder   # candidates' ceiling
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from longscan.bank import MemoryBank
from longscan.bank.search import DEPTH
from longscan.bench.ladder import (
    DEFAULT_RUNGS,
    answerable,
    candidate_ceiling,
    load_corpus,
    run_ladder,
)

COLUMNS = ("docSR@10", "docFR@10", "docR@1", "docSR@1", "p50_ms", "p99_ms")


def table(rows: list[dict]) -> str:
    lines = [
        "| rung | documents | tokens | queries | system | " + " | ".join(COLUMNS) + " |",
        "|---|---:|---:|---:|---|" + "---:|" * len(COLUMNS),
    ]
    for row in rows:
        for system, values in row["systems"].items():
            cells = [
                "–"
                if values[c] is None
                else f"{values[c]:.3f}"
                if "ms" not in c
                else f"{values[c]:.1f}"
                for c in COLUMNS
            ]
            lines.append(
                f"| {row['rung']} | {row['documents']:,} | {row['tokens']:,} | {row['queries']} | "
                f"{system} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def print_ceiling(out: Path, per_domain: int) -> None:
    bank = MemoryBank(out / "banks" / "shared")
    queries = answerable(bank, load_corpus(per_domain=per_domain).queries)
    stats = bank.stats()
    print(f"{stats['documents']:,} documents, {stats['tokens']:,} tokens, {len(queries)} queries")
    print("| candidates K | hybrid docSR@K | hybrid docFR@K |\n|---:|---:|---:|")
    for depth, values in candidate_ceiling(bank, queries).items():
        print(f"| {depth} | {values['SR']:.3f} | {values['FR']:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-domain", type=int, default=20, help="Queries per dataset.")
    parser.add_argument("--max-tokens", type=int, default=20_000_000, help="Largest rung.")
    parser.add_argument("--out", type=Path, default=Path("runs/ladder"))
    parser.add_argument(
        "--depth", type=int, default=DEPTH, help="Candidates the two-stage scanner reads."
    )
    parser.add_argument("--ray-address", help="A Ray cluster (default: Ray embedded here).")
    parser.add_argument("--table", type=Path, help="Print the table of an existing ladder.json.")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="Instead of running the ladder, read the largest rung's bank in --out and print "
        "the hybrid first stage's docSR@K/docFR@K per candidate depth K: what any second "
        "stage reading K candidates can reach at most.",
    )
    args = parser.parse_args()
    if args.ceiling:
        print_ceiling(args.out, args.per_domain)
        return
    if args.table is None:
        shutil.rmtree(args.out, ignore_errors=True)
        budgets = tuple(b for b in DEFAULT_RUNGS if b <= args.max_tokens)
        rows = run_ladder(
            args.out,
            budgets,
            per_domain=args.per_domain,
            ray_address=args.ray_address,
            depth=args.depth,
        )
    else:
        rows = json.loads(args.table.read_text())
    print(table(rows))


if __name__ == "__main__":
    main()
