"""Compact markdown tables (the key measures) from the JSON files a benchmark run wrote.

python benchmarks/summarize.py runs/quality
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from longscan.evaluation import EvaluationResult
from longscan.evaluation.report import markdown_table

KEY_MEASURES = (
    "hit@100",
    "hit@300",
    "hit@1000",
    "hit@2000",
    "SR@300",
    "FR@100",
    "FR@300",
    "FR@1000",
    "FR@2000",
    "ahit@100",
    "ahit@300",
    "ahit@1000",
    "ahit@2000",
    "R@10",
    "R@50",
    "nDCG@10",
    "docSR@10",
    "docR@1",
    "docFR@10",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    for path in sorted(args.folder.glob("*.json")):
        raw = json.loads(path.read_text())
        if not isinstance(raw, list):
            continue
        results = [EvaluationResult.from_dict(entry) for entry in raw]
        scored = {name for result in results for name in result.overall}
        shown = [name for name in KEY_MEASURES if name in scored]
        print(f"#### {path.stem}\n\n{markdown_table(results, shown)}\n")


if __name__ == "__main__":
    main()
