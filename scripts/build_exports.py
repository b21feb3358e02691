"""Build the ONNX graphs the query path runs into the package, so a wheel built after it
answers questions without torch.

    python scripts/build_exports.py [--out src/longscan/exports] [--check]

Asks the bundled novel one question through every model the query path loads (the
scanner's encoder and networks, the dense baselines' encoder, the re-scorer that also
judges abstention, the extractive reader) with an empty cache, which exports each graph
from the shipped weights (this needs torch: ``pip install -e ".[test]"``). The graphs are
copied to ``--out`` under names without the onnxruntime version, with ``manifest.json``
(name → SHA-256), which ``longscan.files.prebuilt_export`` checks before any use. With
``--check`` it only says whether ``--out`` holds every graph and each matches its manifest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "longscan" / "exports"
NOVEL = ROOT / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTION = "What time is it always at the Hatter's tea party?"
# The retrievers whose models the query path loads: the scanner (its encoder and networks),
# dense-sentence (the baselines' encoder), rerank (the re-scorer, which also judges
# abstention); every question is answered by the extractive reader.
RETRIEVERS = ("scanner", "dense-sentence", "rerank")
# One question through each, in a process of its own whose cache folder is empty, so every
# graph is exported there.
WARM = """
import sys
from longscan.answering.answerers import ExtractiveAnswerer
from longscan.pipeline import Pipeline
from longscan.readers.files import read_paths

documents = read_paths([sys.argv[1]])
for retriever in sys.argv[3:]:
    Pipeline(retriever, ExtractiveAnswerer(), abstain=True).answer(sys.argv[2], documents)
"""


def build(out: Path, retrievers: tuple[str, ...] = RETRIEVERS) -> dict[str, str]:
    """Export every graph of ``retrievers``' query path into an empty cache, then copy the
    graphs (not the optimised forms, which each runtime makes for itself) to ``out`` with
    their manifest."""
    from longscan.files import MANIFEST, file_sha256, portable_name

    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "LONGSCAN_CACHE_DIR": cache}
        command = [sys.executable, "-c", WARM, str(NOVEL), QUESTION, *retrievers]
        subprocess.run(command, env=environment, check=True)
        graphs = sorted(
            path
            for path in (Path(cache) / "onnx").glob("*.onnx")
            if not path.name.endswith(".optimized.onnx")
        )
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        manifest = {}
        for graph in graphs:
            target = out / portable_name(graph.name)
            shutil.copyfile(graph, target)
            manifest[target.name] = file_sha256(target)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def check(out: Path) -> list[str]:
    """What is wrong with ``out``: each graph that the query path would not use (missing, or
    differing from its manifest), judged as ``longscan.files.prebuilt_export`` judges it."""
    from longscan.files import MANIFEST, prebuilt_export

    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"no readable manifest in {out}: {error}"]
    return [
        f"{name}: missing or differs from its manifest"
        for name in manifest
        if prebuilt_export(name, out) is None
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="Check --out; build nothing.")
    args = parser.parse_args()
    if args.check:
        problems = check(args.out)
        print("\n".join(problems) or f"{args.out}: every graph matches its manifest")
        sys.exit(1 if problems else 0)
    manifest = build(args.out)
    size = sum((args.out / name).stat().st_size for name in manifest)
    print(f"{len(manifest)} graphs, {size / 1e6:,.0f} MB, in {args.out}")


if __name__ == "__main__":
    main()
