"""`longscan bank add` of a few small files, in this process against on embedded Ray.

Each run is a fresh `longscan bank add` process (as a user runs it) into a fresh bank: once
in process (the default, no Ray) and once with `--ray-address local` (Ray embedded, what
every `bank add` did before Ray became the [cluster] extra), alternating, then a no-op
re-run of each. The files are HotpotQA paragraphs from ../shared/data, read in place.

python benchmarks/bank_add.py --files 10 --repeats 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from longscan.bench.builders import build_multihop

MODES = {"in process": [], "embedded Ray": ["--ray-address", "local"]}


def write_files(folder: Path, count: int) -> None:
    items = build_multihop("hotpotqa", "dev", 3_000, max_items=count, mode="collection")
    texts = list({d.id: d.text for item in items for d in item.documents}.values())[:count]
    folder.mkdir(parents=True)
    for i, text in enumerate(texts):
        (folder / f"{i}.txt").write_text(text, encoding="utf-8")


def timed_add(folder: Path, bank: Path, options: list[str]) -> float:
    command = [sys.executable, "-m", "longscan.cli", "bank", "add", str(folder), "--bank",
               str(bank), "--no-sentence-vectors", *options]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bank-add-"))
    try:
        write_files(root / "texts", args.files)
        first: dict[str, list[float]] = {mode: [] for mode in MODES}
        again: dict[str, list[float]] = {mode: [] for mode in MODES}
        for repeat in range(args.repeats):
            for mode, options in MODES.items():
                bank = root / f"bank-{repeat}-{len(first[mode])}-{mode.replace(' ', '-')}"
                first[mode].append(timed_add(root / "texts", bank, options))
                again[mode].append(timed_add(root / "texts", bank, options))
        print(f"{args.files} files, {args.repeats} runs each (seconds, median [min–max])\n")
        print("| bank add | first add | no-op re-run |")
        print("|---|---:|---:|")
        for mode in MODES:
            cells = [f"{statistics.median(t):.2f} [{min(t):.2f}–{max(t):.2f}]"
                     for t in (first[mode], again[mode])]  # fmt: skip
            print(f"| {mode} | {cells[0]} | {cells[1]} |")
        for name, times in (("first add", first), ("no-op re-run", again)):
            here, on_ray = (statistics.median(times[mode]) for mode in MODES)
            ratio = here / on_ray
            print(f"\n{name}: in process / embedded Ray = {ratio:.2f} (bar: ≤ 0.33)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
