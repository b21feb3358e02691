"""Scanner speed and memory against every baseline, measured in one run.

    python benchmarks/speed.py [--data-dir ../shared/data] [--threads 2] [--repeats 3] \
        [--checkpoint DIR]

Builds documents of 100k, 400k and 1M tokens from the Loong corpus (real financial reports
and papers; tokens = MiniLM word pieces), then measures in fresh subprocesses (so peak RSS
and caches are per measurement): every retriever's first query; scanner first scan (cold
cache), re-query (warm cache; also of the text read again as a new Document, as the next
process of a user reads it), stream vs sliding; peak RSS of streaming; with
``--rescoring-cost``, the scanner (``--checkpoint``) with its cross-encoder rounds
(``--rounds`` JSON) against the shipped scan alone (and ``--against REF``'s scan); with
``--against REF`` alone, this checkout's scan against a git commit's in the same run, and
the command line's wall times.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import result_files

from longscan.devices import PRECISION_VARIABLE
from longscan.encoders.bert import RUNTIME_VARIABLE
from longscan.retrievers import BASELINES

REQUERY_QUESTIONS = [
    "Who is the chief executive officer?",
    "How much cash did operating activities provide?",
    "What are the main risks to the business?",
    "Which segment grew fastest during the year?",
    "How many employees does the company have?",
    "What was the effective income tax rate?",
    "Where is the company headquartered?",
    "What dividends were declared per share?",
    "How much long-term debt is outstanding?",
    "Who audits the financial statements?",
]
CHILD = (
    f"REQUERY_QUESTIONS = {REQUERY_QUESTIONS!r}\n"
    + r"""
import json, os, resource, sys, time
from pathlib import Path
from longscan.documents import Document
from longscan.retrievers import get_retriever
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning.scanner import Scanner
text = open(os.environ["DOC"], encoding="utf-8").read()
document = Document("doc", text)
query = "What was the total revenue reported for the fiscal year?"
kind = os.environ["KIND"]
try:  # as the command line does; older checkouts (--against) did it inside the scanner
    from longscan.devices import bound_allocator
    bound_allocator()
except ImportError:
    pass
document.sentences  # segmentation is shared by every retriever; timed separately
if kind in ("scanner", "scanner-rerank"):
    checkpoint = os.environ.get("CHECKPOINT")
    rounds = {}
    if kind == "scanner-rerank":
        from dataclasses import replace
        from longscan.rerankers.rounds import shipped_rounds
        settings = json.loads(os.environ.get("ROUNDS", "{}"))
        rounds["rounds"] = replace(shipped_rounds(settings.pop("adapter", None)), **settings)
    directory = checkpoint and Path(checkpoint)
    scanner = Scanner.from_pretrained(directory, mode=os.environ["MODE"], **rounds)
    retriever = ScannerRetriever(scanner)
else:
    retriever = get_retriever(kind)
from longscan.encoders import get_encoder
get_encoder()  # load the model outside the timing, as a server would
started = time.perf_counter()
retriever.retrieve(query, [document], top_k=50)
first = time.perf_counter() - started
questions = REQUERY_QUESTIONS[: int(os.environ.get("REQUERIES", "1"))]
started = time.perf_counter()
for question in questions:
    retriever.retrieve(question, [document], top_k=50)
again = (time.perf_counter() - started) / len(questions)
# the same text as a new Document, as a user's next process reads it: what a re-query costs
# before it reaches the cached vectors (segmentation, like the first query's, untimed)
renewed = Document("doc", text)
renewed.sentences
started = time.perf_counter()
retriever.retrieve(questions[0], [renewed], top_k=50)
fresh = time.perf_counter() - started
# VmHWM as longscan.devices.peak_rss_bytes reads it, written out here because this child
# also runs older checkouts (--against), which lack that function
status = Path("/proc/self/status")
lines = status.read_text().splitlines() if status.exists() else []
hwm = [line for line in lines if line.startswith("VmHWM:")]
peak_kb = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"first": first, "requery": again, "fresh": fresh,
                  "sentences": len(document.sentences),
                  "rss_mb": peak_kb / 1024}))
"""
)


def corpus_text(data_dir: Path, tokens: int) -> str:
    from longscan.encoders import get_encoder

    tokenizer = get_encoder().tokenizer
    pieces, count = [], 0
    files = sorted((data_dir / "corpus" / "loong-docs" / "financial").glob("*.txt"))
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for paragraph in text.split("\n\n"):
            count += len(tokenizer.pieces([paragraph], len(paragraph) + 1)[0])
            pieces.append(paragraph)
            if count >= tokens:
                return "\n\n".join(pieces)
    raise ValueError(f"the corpus holds fewer than {tokens:,} tokens")


@cache
def exported_graphs(checkpoint: Path | None) -> Path:
    """A folder holding the encoder's and ``checkpoint``'s scanner's ONNX exports, made once
    in a separate process, so every measurement times and sizes a user's later questions
    (which import no torch) rather than the one-time export."""
    folder = Path(tempfile.mkdtemp(prefix="longscan-speed-onnx-"))
    atexit.register(shutil.rmtree, folder, True)
    load = "from longscan.scanning.scanner import Scanner; Scanner.from_pretrained({})"
    target = "None" if checkpoint is None else repr(str(checkpoint.resolve()))
    env = {**os.environ, "LONGSCAN_CACHE_DIR": str(folder)}
    subprocess.run([sys.executable, "-c", load.format(target)], env=env, check=True)
    return folder / "onnx"


def measure(
    doc: Path,
    kind: str,
    threads: int,
    mode: str = "stream",
    checkpoint: Path | None = None,
    rounds: dict[str, float] | None = None,
    source: Path | None = None,
    requeries: int = 1,
) -> dict:
    """One fresh-process measurement; ``source``: a checkout whose ``src`` is imported instead
    of this one (the code being compared against); re-query time is the mean over
    ``requeries`` different questions."""
    with tempfile.TemporaryDirectory() as cache:
        if source is None:  # the ONNX graphs a user's first question exports, made once
            (Path(cache) / "onnx").symlink_to(exported_graphs(checkpoint), True)
        env = {
            **({} if source is None else {"PYTHONPATH": str(source / "src")}),
            "OMP_NUM_THREADS": str(threads),  # torch's threads, and ONNX Runtime's without it
            "REQUERIES": str(requeries),
            **({} if checkpoint is None else {"CHECKPOINT": str(checkpoint.resolve())}),
            **({} if rounds is None else {"ROUNDS": json.dumps(rounds)}),
            "DOC": str(doc),
            "KIND": kind,
            "THREADS": str(threads),
            "MODE": mode,
            "LONGSCAN_CACHE_DIR": cache,
            "HF_HUB_OFFLINE": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": str(Path.home()),
            "MALLOC_ARENA_MAX": "2",
            **{k: v for k, v in os.environ.items() if k in (PRECISION_VARIABLE, RUNTIME_VARIABLE)},
        }
        out = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])


def measure_best(
    doc: Path,
    kind: str,
    threads: int,
    repeats: int,
    mode: str = "stream",
    checkpoint: Path | None = None,
    rounds: dict[str, float] | None = None,
    source: Path | None = None,
    requeries: int = 1,
) -> dict:
    """The fastest of ``repeats`` fresh-process measurements (times are minima, the peak RSS
    the maximum): on 2 shared cores a single run can be 15% slow for reasons outside it."""
    runs = [
        measure(doc, kind, threads, mode, checkpoint, rounds, source, requeries)
        for _ in range(repeats)
    ]
    best = min(runs, key=lambda run: run["first"])
    return {
        **best,
        "requery": min(r["requery"] for r in runs),
        "fresh": min(r["fresh"] for r in runs),
        "rss_mb": max(r["rss_mb"] for r in runs),
        "runs": [r["first"] for r in runs],
    }


def time_ratio(data_dir: Path, threads: int, repeats: int) -> None:
    """The 400k/100k first-scan ratio, measured ``repeats`` times: one run is noisy here."""
    with tempfile.TemporaryDirectory() as folder:
        docs = {}
        for size in (100_000, 400_000):
            docs[size] = Path(folder) / f"doc{size}.txt"
            docs[size].write_text(corpus_text(data_dir, size), encoding="utf-8")
        for run in range(repeats):
            first = {size: measure(doc, "scanner", threads)["first"] for size, doc in docs.items()}
            print(
                f"run {run + 1}: 100k {first[100_000]:.2f} s, 400k {first[400_000]:.2f} s, "
                f"ratio {first[400_000] / first[100_000]:.2f} (bar <= 4.4)",
                flush=True,
            )


def rescoring_cost(
    data_dir: Path,
    threads: int,
    repeats: int,
    checkpoint: Path | None,
    rounds: dict[str, float] | None,
    ref: str | None = None,
) -> None:
    """The scanner (``checkpoint``, default the shipped one) with the cross-encoder's
    ``rounds`` against the shipped scan alone on the 100k-token report, each the fastest of
    ``repeats`` fresh processes, a re-query the mean of ten questions; with ``ref``, also
    against that commit's scan alone (the scanner shipped when the re-scorer issue began)."""
    requeries = len(REQUERY_QUESTIONS)
    with tempfile.TemporaryDirectory() as folder, baseline_checkout(ref, folder) as worktree:
        doc = Path(folder) / "doc100000.txt"
        doc.write_text(corpus_text(data_dir, 100_000), encoding="utf-8")
        runs = {}
        if worktree is not None:
            runs[f"scanner at {ref}"] = measure_best(
                doc, "scanner", threads, repeats, source=worktree, requeries=requeries
            )
        runs["scanner"] = measure_best(doc, "scanner", threads, repeats, requeries=requeries)
        runs["scanner-rerank"] = measure_best(
            doc,
            "scanner-rerank",
            threads,
            repeats,
            checkpoint=checkpoint,
            rounds=rounds,
            requeries=requeries,
        )
    print(
        "\n| retriever | first query (s) | every run (s) | re-query (s, mean of "
        f"{requeries}) | peak RSS (MB) |"
    )
    print("|---|---:|---|---:|---:|")
    for kind, r in runs.items():
        print(
            f"| {kind} | {r['first']:.2f} | {', '.join(f'{t:.2f}' for t in r['runs'])} "
            f"| {r['requery']:.3f} | {r['rss_mb']:.0f} |"
        )
    rescored = runs["scanner-rerank"]
    for kind, alone in runs.items():
        if kind == "scanner-rerank":
            continue
        first, again = rescored["first"] / alone["first"], rescored["requery"] / alone["requery"]
        print(f"\nfirst scan, with rounds / {kind}: {first:.2f} (bar <= 1.3)")
        print(f"re-query, with rounds / {kind}: {again:.2f} (bar <= 1.5)")


@contextmanager
def baseline_checkout(ref: str | None, folder: str) -> Iterator[Path | None]:
    """``ref`` (a git commit) checked out to a temporary worktree under ``folder`` for the
    duration; None without a ref."""
    if ref is None:
        yield None
        return
    root = Path(__file__).resolve().parents[1]
    worktree = Path(folder) / "baseline"
    subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", str(worktree), ref],
        check=True,
        capture_output=True,
    )
    try:
        yield worktree
    finally:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "remove", "--force", str(worktree)], check=False
        )


def command_seconds(args: list[str], cache: Path, threads: int, repeats: int) -> float:
    """The fastest wall time of ``longscan ARGS`` as a user runs it (a fresh process each)."""
    env = {
        **os.environ,
        "LONGSCAN_CACHE_DIR": str(cache),
        "OMP_NUM_THREADS": str(threads),
        "COLUMNS": "80",
    }
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([LONGSCAN, *args], env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return min(times)


# the command as a user runs it: the console script beside this interpreter, else on PATH
LONGSCAN = (
    str(Path(sys.executable).with_name("longscan"))
    if Path(sys.executable).with_name("longscan").exists()
    else "longscan"
)


def _git_short(ref: str) -> str:
    done = subprocess.run(["git", "rev-parse", "--short", ref], capture_output=True, text=True)
    return done.stdout.strip() or ref


def against(
    data_dir: Path,
    threads: int,
    repeats: int,
    ref: str,
    sizes: list[int],
    checkpoint: Path | None = None,
) -> dict[str, Any]:
    """The speed bars: this checkout's scanner (``checkpoint``, default the shipped
    one) against ``ref``'s shipped one (a git commit, checked out to a temporary worktree) in
    the same run, then the command line on the bundled novel (shipped checkpoint)."""
    root = Path(__file__).resolve().parents[1]
    requeries = len(REQUERY_QUESTIONS)
    with tempfile.TemporaryDirectory() as folder, baseline_checkout(ref, folder) as worktree:
        docs = {}
        for size in sizes:
            docs[size] = Path(folder) / f"doc{size}.txt"
            docs[size].write_text(corpus_text(data_dir, size), encoding="utf-8")
        small = docs[min(sizes)]
        before = measure_best(
            small, "scanner", threads, repeats, source=worktree, requeries=requeries
        )
        now = {
            size: measure_best(
                doc,
                "scanner",
                threads,
                repeats if size == min(sizes) else 1,
                checkpoint=checkpoint,
                requeries=requeries,
            )
            for size, doc in docs.items()
        }
    columns = ["code", "tokens", "first scan (s)", "every run (s)"]
    columns += [f"re-query (s, mean of {requeries})", "re-query, new Document (s)"]
    columns += ["peak RSS (MB)"]
    head = _git_short("HEAD")
    rows = [(ref, min(sizes), before)] + [(head, size, r) for size, r in now.items()]
    found = result_files.table(
        f"The scanner at {head} against {ref}",
        columns,
        [
            [code, f"{size:,}", round(r["first"], 2), ", ".join(f"{t:.2f}" for t in r["runs"])]
            + [round(r["requery"], 3), round(r["fresh"], 3), round(r["rss_mb"])]
            for code, size, r in rows
        ],
    )
    print("\n" + result_files.markdown(found, ""))
    base = now[min(sizes)]
    per_100k = base["requery"] * 100_000 / min(sizes)
    print(f"\nfirst scan, {ref} / this checkout: {before['first'] / base['first']:.2f} (bar >= 3)")
    print(f"re-query per 100k tokens: {per_100k:.3f} s (bar <= 0.2)")
    print(
        f"re-query, this checkout / {ref}: {base['requery'] / before['requery']:.3f} (bar <= 0.2)"
    )
    if len(sizes) > 1:
        ratio = now[max(sizes)]["rss_mb"] / base["rss_mb"]
        print(f"peak RSS {max(sizes):,} / {min(sizes):,} tokens: {ratio:.2f} (bar <= 1.3)")
    novel = str(root / "src" / "longscan" / "data" / "sample_novel.txt")
    with tempfile.TemporaryDirectory() as cache:
        ask = ["ask", "-q", "Who fell down the rabbit hole?", novel]
        command_seconds(ask, Path(cache), threads, 1)  # the first question scans the novel
        second = ["ask", "-q", "What did the Cheshire Cat say?", novel]
        scanner = command_seconds(second, Path(cache), threads, repeats)
        bm25 = command_seconds(
            [*second[:1], "-r", "bm25-sentence", *second[1:]], Path(cache), threads, repeats
        )
        helping = command_seconds(["--help"], Path(cache), threads, repeats)
    print(
        f"\n`longscan ask` on the scanned novel: {scanner:.2f} s; with -r bm25-sentence: "
        f"{bm25:.2f} s; ratio {scanner / bm25:.2f} (bars <= 2 and <= 3 s)"
    )
    print(f"`longscan --help`: {helping:.2f} s (bar <= 1 s)")
    commands = result_files.table(
        "The command line (bundled novel, already scanned; best of the repeats)",
        ["command", "seconds"],
        [
            ["longscan ask", round(scanner, 2)],
            ["longscan ask -r bm25-sentence", round(bm25, 2)],
            ["longscan --help", round(helping, 2)],
        ],
    )
    return {"tables": [found, commands]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sizes", default="100000,400000,1000000")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="Measure every retriever at sizes up to 400k tokens this many times and keep the "
        "fastest (the 1M scan, there for peak RSS, runs once).",
    )
    parser.add_argument(
        "--ratio-only",
        type=int,
        metavar="N",
        help="Only time the scanner's first scan at 100k and 400k tokens, N times each "
        "(fresh process and cache every time), and print each run's ratio.",
    )
    parser.add_argument("--checkpoint", type=Path, help="Scanner checkpoint (default: shipped).")
    parser.add_argument(
        "--rescoring-cost",
        action="store_true",
        help="Only time the scanner (--checkpoint) with its cross-encoder rounds against the "
        "shipped scan alone at 100k tokens (and against REF's scan alone with --against).",
    )
    parser.add_argument(
        "--rounds",
        default=None,
        help="With --rescoring-cost: the rounds' settings as JSON, each replacing the shipped "
        "rounds' (TwoRounds' fields, and \"adapter\": an adapter directory).",
    )
    parser.add_argument(
        "--against",
        metavar="REF",
        help="Only the speed bars: this checkout's scanner against REF's (a git commit) "
        "at the smallest of --sizes, peak RSS at the largest, and the command line.",
    )
    parser.add_argument(
        "--save", default=None, help="With --against: write benchmarks/results/NAME.json."
    )
    args = parser.parse_args()
    if args.rescoring_cost:
        rounds = None if args.rounds is None else json.loads(args.rounds)
        rescoring_cost(
            args.data_dir, args.threads, args.repeats, args.checkpoint, rounds, args.against
        )
        return
    if args.against:
        sizes = sorted(int(s) for s in args.sizes.split(","))
        found = against(
            args.data_dir, args.threads, args.repeats, args.against, sizes, args.checkpoint
        )
        if args.save:
            print(f"saved {result_files.save(args.save, vars(args), found['tables'])}")
        return
    if args.ratio_only:
        time_ratio(args.data_dir, args.threads, args.ratio_only)
        return
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            doc = Path(folder) / f"doc{size}.txt"
            doc.write_text(corpus_text(args.data_dir, size), encoding="utf-8")
            repeats = args.repeats if size <= 400_000 else 1
            scan = measure_best(doc, "scanner", args.threads, repeats, checkpoint=args.checkpoint)
            row = {"scanner": scan}
            if size <= 100_000:
                row["scanner-sliding"] = measure_best(
                    doc, "scanner", args.threads, repeats, "sliding", args.checkpoint
                )
                for name in BASELINES:
                    row[name] = measure_best(doc, name, args.threads, repeats)
            results[size] = row
            print(size, json.dumps(row), flush=True)
    base = results[min(results)]
    print(
        "\n| tokens | retriever | first query (s) | every run (s) | tokens/s | re-query (s) "
        "| peak RSS (MB) |"
    )
    print("|---:|---|---:|---|---:|---:|---:|")
    for size, row in results.items():
        for name, r in row.items():
            print(
                f"| {size:,} | {name} | {r['first']:.2f} "
                f"| {', '.join(f'{t:.2f}' for t in r['runs'])} | {size / r['first']:,.0f} "
                f"| {r['requery']:.3f} | {r['rss_mb']:.0f} |"
            )
    s100 = base["scanner"]
    dense = base["dense-sentence"]["first"]
    print(f"\nscanner first scan / dense-sentence: {s100['first'] / dense:.2f} (bar <= 1.2)")
    print(f"re-query / first scan: {s100['requery'] / s100['first']:.3%} (bar <= 5%)")
    if 400_000 in results:
        print(
            f"time 400k / 100k: {results[400_000]['scanner']['first'] / s100['first']:.2f}"
            " (bar <= 4.4)"
        )
    if 1_000_000 in results:
        print(
            f"peak RSS 1M / 100k: {results[1_000_000]['scanner']['rss_mb'] / s100['rss_mb']:.2f}"
            " (bar <= 1.3)"
        )


if __name__ == "__main__":
    main()
