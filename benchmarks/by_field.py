"""An evaluation's rows again, split by a field of its items (Loong's domain or level).

    python benchmarks/by_field.py RESULT.json [RESULT.json ...] [--field type] [--save NAME]

``RESULT.json`` is what ``longscan eval`` (and ``filings_bars.py``) writes for one benchmark:
its settings and each retriever's per-item records. The items are built again from the
settings, and every measure is averaged over the items that share a value of ``--field``
in their metadata (Loong: ``type`` is ``financial`` or ``paper``, ``level`` 1 to 4), so a
gain on one domain that costs another shows. Nothing is retrieved again: the records are
the ones the run kept.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import result_files

from longscan.bench.catalogue import build_benchmark


def item_field(settings: dict[str, Any], field: str) -> dict[str, str]:
    """Item id → the value of ``field`` in its metadata, for the items the run read."""
    items = build_benchmark(
        settings["benchmark"],
        settings["split"],
        settings["target_words"],
        settings["max_items"],
        settings["seed"],
    )
    return {item.id: str(item.metadata.get(field)) for item in items}


def split_rows(saved: dict[str, Any], field: str) -> tuple[list[str], list[list[Any]]]:
    """One row per retriever and value: the value's item count and each measure's mean."""
    values = item_field(saved["settings"], field)
    measures: list[str] = []
    rows: list[list[Any]] = []
    for result in saved["results"]:
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for record in result["records"]:
            groups[values[record["item_id"]]].append(record["scores"])
        measures = measures or list(result["records"][0]["scores"])
        for value in sorted(groups):
            scores = groups[value]
            means = [round(sum(s[m] for s in scores) / len(scores), 3) for m in measures]
            rows.append([result["retriever"], value, len(scores), *means])
    return ["retriever", field, "items", *measures], rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--field", default="type")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    args = parser.parse_args()
    tables = []
    for path in args.results:
        saved = json.loads(path.read_text())
        columns, rows = split_rows(saved, args.field)
        settings = saved["settings"]
        read = ", table context" if settings.get("table_context") else ""
        title = f"{settings['benchmark']}{read}, by {args.field}"
        tables.append(result_files.table(title, columns, rows))
        print(result_files.markdown(tables[-1]))
    if args.save:
        print(f"saved {result_files.save(args.save, vars(args), tables)}")


if __name__ == "__main__":
    main()
