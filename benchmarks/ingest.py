"""Memory-bank ingestion throughput: tokens/s per stage, peak memory, index sizes, and
first-stage query latency.

Ingests a slice of the Loong corpus (financial reports and papers, alternating, read in place
from ../shared/data) into a fresh bank on Ray, once per size. Each size runs in its own
process, so its peak RSS is its own: equal peaks at two sizes show memory does not grow with
the corpus.

python benchmarks/ingest.py --tokens 1000000 --tokens 5000000 --out runs/ingest
python benchmarks/ingest.py --tokens 1000000 --sentence-vectors --queries 20 --out runs/ingest-sv
python benchmarks/ingest.py --corpus hotpotqa --tokens 300000 --out runs/ingest-paragraphs
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from longscan.bank import MemoryBank, search
from longscan.bank.ingest import ingest
from longscan.bank.search import SCANNED_TOKENS
from longscan.bench.datasets import data_path
from longscan.devices import bound_allocator
from longscan.documents import Document
from longscan.parallel import ray_session
from longscan.readers.files import iter_paths

CHARS_PER_TOKEN = 4  # only to cut the slice; the report counts cl100k tokens exactly


def loong_slice(data_dir: str | None, tokens: int) -> Iterator[Document]:
    """Financial reports and papers, alternating, until about ``tokens`` tokens."""
    root = data_path("corpus/loong-docs", data_dir)
    domains = ("financial", "paper")
    streams = [
        (Document(f"{domain}/{d.id}", d.text) for d in iter_paths([root / domain]))
        for domain in domains
    ]
    chars = 0
    for document in itertools.chain.from_iterable(itertools.zip_longest(*streams)):
        if document is None:
            continue
        if chars >= tokens * CHARS_PER_TOKEN:
            return
        chars += len(document.text)
        yield document


def hotpotqa_slice(data_dir: str | None, tokens: int) -> Iterator[Document]:
    """HotpotQA dev paragraphs (about 130 tokens each), one document per title, until about
    ``tokens`` tokens: the many-small-documents case, where per-document costs dominate."""
    from longscan.bench.builders import multihop_questions

    seen: set[str] = set()
    chars = 0
    for question in multihop_questions("hotpotqa", "dev", data_dir=data_dir):
        for paragraph in question.paragraphs:
            if paragraph.title in seen:
                continue
            if chars >= tokens * CHARS_PER_TOKEN:
                return
            seen.add(paragraph.title)
            chars += len(paragraph.text)
            yield Document(f"hotpotqa/{paragraph.title}", paragraph.text)


SLICES = {"loong": loong_slice, "hotpotqa": hotpotqa_slice}


def query_latency(bank: MemoryBank, queries: int, two_stage: bool) -> dict[str, Any]:
    """p50/p99 milliseconds per first stage (and two-stage, from the sentence cache), for
    queries made of 12 words taken from random places of random documents.

    One PyTorch thread: on a machine whose cores are busy, two threads wait on each other
    (measured here: 730 ms for one query encoding against 13 ms with one thread).
    """
    import torch

    torch.set_num_threads(1)
    rng = random.Random(0)
    ids = [row[0] for row in bank.db.execute("SELECT id FROM documents")]
    asked = []
    for doc_id in rng.choices(ids, k=queries):
        words = bank.get([doc_id])[0].text.split()
        start = rng.randrange(max(1, len(words) - 12))
        asked.append(" ".join(words[start : start + 12]))
    systems: dict[str, Any] = {"bm25": None, "dense": None, "hybrid": None}
    if two_stage:
        from longscan.scanning.scanner import Scanner

        systems["two-stage"] = Scanner.from_pretrained(cache=bank.sentence_cache())
    search(bank, asked[0], 10, "hybrid")  # load the encoder and indexes before timing
    result = {}
    for system, scanner in systems.items():
        method = "hybrid" if scanner is not None else system
        seconds = []
        for query in asked:
            started = time.perf_counter()
            search(bank, query, 10, method, depth=20, scanner=scanner)  # type: ignore[arg-type]
            seconds.append(time.perf_counter() - started)
        result[system] = {
            "p50_ms": round(float(np.percentile(seconds, 50)) * 1000, 1),
            "p99_ms": round(float(np.percentile(seconds, 99)) * 1000, 1),
        }
    return result


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_one(args: argparse.Namespace, tokens: int) -> dict[str, Any]:
    """Ingest one slice into a fresh bank; returns the report, sizes and latencies."""
    folder = args.out / f"bank-{args.corpus}-{tokens}{'-sv' if args.sentence_vectors else ''}"
    shutil.rmtree(folder, ignore_errors=True)
    bank = MemoryBank(folder)
    scanned = SCANNED_TOKENS if args.sentence_vectors else None
    bound_allocator()  # as `longscan bank add` does: freed texts go back to the OS
    with ray_session(args.ray_address, num_cpus=args.workers):
        documents = SLICES[args.corpus](args.data_dir, tokens)
        report = ingest(bank, documents, scanned_tokens=scanned)
    sizes = {
        name: folder_bytes(folder / name)
        for name in ("bank.sqlite", "bm25", "dense.usearch", "vectors")
        if (folder / name).exists()
    }
    return {
        "corpus": args.corpus,
        "slice_tokens": tokens,
        "sentence_vectors": args.sentence_vectors,
        "documents": len(bank),
        "ingest": report.as_dict(),
        "bytes": sizes,
        "latency": query_latency(bank, args.queries, args.sentence_vectors),
    }


def table(rows: list[dict[str, Any]]) -> str:
    stages = ("read", "tokenize", "encode", "sentences", "index")
    lines = [
        "| tokens | docs | wall s | "
        + " | ".join(f"{s} tok/s" for s in stages)
        + " | driver MB | worker MB | bm25 B/token | dense B/doc |",
        "|---:|---:|---:|" + "---:|" * (len(stages) + 4),
    ]
    for row in rows:
        report = row["ingest"]
        rates = [
            f"{report['tokens_per_second'][s]:,}" if s in report["tokens_per_second"] else "–"
            for s in stages
        ]
        lines.append(
            f"| {report['tokens']:,} | {row['documents']} | {report['wall_seconds']} | "
            + " | ".join(rates)
            + f" | {report['peak_rss_driver_mb']} | {report['peak_rss_worker_mb']} | "
            f"{row['bytes']['bm25'] / report['tokens']:.2f} | "
            f"{row['bytes']['dense.usearch'] / row['documents']:.0f} |"
        )
    lines += ["", "| tokens | system | p50 ms | p99 ms |", "|---:|---|---:|---:|"]
    for row in rows:
        for system, values in row["latency"].items():
            lines.append(
                f"| {row['ingest']['tokens']:,} | {system} | {values['p50_ms']} | "
                f"{values['p99_ms']} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tokens", type=int, action="append", help="Slice size; repeat for several sizes."
    )
    parser.add_argument(
        "--corpus", choices=sorted(SLICES), default="loong", help="Long reports or paragraphs."
    )
    parser.add_argument(
        "--sentence-vectors", action="store_true", help="Also cache the scanner's vectors."
    )
    parser.add_argument("--queries", type=int, default=50, help="Queries timed per system.")
    parser.add_argument("--workers", type=int, default=None, help="Ray CPUs (default: all).")
    parser.add_argument("--ray-address", default=None, help="A Ray cluster to run on.")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="Default: $LONGSCAN_BENCH_DATA, or ../shared/data beside the checkout.",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/ingest"))
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child run
    parser.add_argument("--table", type=Path, help="Only print the table of an ingest.json.")
    args = parser.parse_args()
    if args.table is not None:
        print(table(json.loads(args.table.read_text())))
        return
    sizes = args.tokens or [1_000_000]
    if any(size < 1 for size in sizes) or args.queries < 1:
        parser.error("--tokens and --queries must be positive")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        print(json.dumps(run_one(args, sizes[0])))
        return
    rows = []
    for size in sizes:  # a process per size: its peak memory is its own
        child = [sys.executable, __file__, "--one", "--tokens", str(size), "--out", str(args.out)]
        child += ["--queries", str(args.queries), "--corpus", args.corpus]
        for flag in ("workers", "ray_address", "data_dir"):
            if getattr(args, flag) is not None:
                child += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        if args.sentence_vectors:
            child.append("--sentence-vectors")
        output = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
        (args.out / "ingest.json").write_text(json.dumps(rows, indent=2))
    print(table(rows))


if __name__ == "__main__":
    main()
