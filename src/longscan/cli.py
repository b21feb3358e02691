"""The ``longscan`` command line: ask a long document, evaluate retrievers on benchmarks.

Heavy libraries are imported inside the commands, so ``longscan --help`` is instant.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

app = typer.Typer(
    help="Question answering over very long documents: find the evidence, cite it by offsets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(width=None if Console().is_terminal else 200)  # logs keep whole tables
errors = Console(stderr=True)

CONTEXT_CHARS = 160


def _fail(message: str, code: int = 2) -> typer.Exit:
    errors.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s: %(message)s",
        stream=sys.stderr,
    )


def _highlighted(text: str, start: int, end: int, context: int) -> Text:
    """The evidence in bold yellow inside ``context`` characters of surrounding text."""
    left = max(0, start - context)
    right = min(len(text), end + context)
    shown = Text()
    shown.append(("…" if left else "") + text[left:start].replace("\n", " "), style="dim")
    shown.append(text[start:end].replace("\n", " "), style="bold yellow")
    shown.append(text[end:right].replace("\n", " ") + ("…" if right < len(text) else ""), "dim")
    return shown


@app.command()
def ask(
    paths: Annotated[list[Path], typer.Argument(help="Text files or directories to search.")],
    query: Annotated[str, typer.Option("--query", "-q", help="The question.")],
    retriever: Annotated[
        str, typer.Option("--retriever", "-r", help="Retriever name (see `longscan retrievers`).")
    ] = "",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Evidence units shown.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines.")] = False,
    context: Annotated[
        int, typer.Option(min=0, help="Characters of context around each hit.")
    ] = CONTEXT_CHARS,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Print the top evidence for a question, with document, offsets, score and context."""
    _setup_logging(verbose)
    from longscan.documents import DocumentError, read_paths
    from longscan.retrievers import get_retriever
    from longscan.retrievers.base import validate_query
    from longscan.retrievers.registry import DEFAULT_RETRIEVER

    try:
        validate_query(query)
        documents = read_paths(paths)
        chosen = get_retriever(retriever or DEFAULT_RETRIEVER)
    except (DocumentError, ValueError) as error:
        raise _fail(str(error)) from None
    with console.status(f"reading {len(documents)} document(s) with {chosen.name}…"):
        evidence = chosen.retrieve(query, documents, top_k=top_k)
    if as_json:
        payload = {
            "query": query,
            "retriever": retriever or DEFAULT_RETRIEVER,
            "evidence": [item.to_dict() for item in evidence],
        }
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    texts = {document.id: document.text for document in documents}
    console.print(f"[bold]{query}[/]  ({retriever or DEFAULT_RETRIEVER})")
    for rank, item in enumerate(evidence, start=1):
        console.print(
            f"\n[bold cyan]{rank}.[/] {item.doc_id} [dim]chars {item.start}–{item.end}"
            f"  score {item.score:.4g}[/]",
            highlight=False,
        )
        console.print(_highlighted(texts[item.doc_id], item.start, item.end, context))


@app.command(name="eval")
def evaluate_command(
    benchmark: Annotated[
        str, typer.Option("--benchmark", "-b", help="Benchmark name (see `longscan benchmarks`).")
    ],
    retriever: Annotated[
        list[str],
        typer.Option("--retriever", "-r", help="Retriever name; repeat to compare several."),
    ],
    split: Annotated[str, typer.Option(help="dev or train.")] = "dev",
    target_words: Annotated[
        int, typer.Option(min=100, help="Words per built long document.")
    ] = 20_000,
    max_items: Annotated[int | None, typer.Option(min=1, help="Items to evaluate.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the long-document builder.")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Folder for the JSON, markdown and plot.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Evaluate retrievers on a benchmark: budgeted, sentence-level and document-level metrics."""
    _setup_logging(verbose)
    from longscan.bench.runner import run_benchmark
    from longscan.evaluation.report import KEY_MEASURES, comparison_table

    try:
        run = run_benchmark(
            benchmark,
            retriever,
            split=split,
            target_words=target_words,
            max_items=max_items,
            seed=seed,
            out_dir=out,
        )
    except (ValueError, FileNotFoundError) as error:
        raise _fail(str(error)) from None
    scored = {name for result in run.results for name in result.overall}
    shown = [name for name in KEY_MEASURES if name in scored]
    console.print(comparison_table(run.results, shown, title=f"{benchmark} ({split})"))
    for path in run.files:
        console.print(f"wrote {path}", highlight=False)


@app.command(name="train")
def train_command(
    out: Annotated[Path, typer.Option(help="Checkpoint folder to write.")],
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    max_per_source: Annotated[
        int, typer.Option(min=1, help="Examples per (dataset, length, seed).")
    ] = 250,
    seeds: Annotated[str, typer.Option(help="Builder seeds, comma-separated.")] = "0,1,2,3",
    bidirectional: Annotated[
        bool, typer.Option("--bidirectional/--causal", help="Add the reversed pass.")
    ] = False,
    d_model: Annotated[int, typer.Option(min=8)] = 256,
    layers: Annotated[int, typer.Option(min=1)] = 4,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-3,
    dropout: Annotated[float, typer.Option(min=0.0, max=0.9)] = 0.1,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    data_cache: Annotated[
        Path | None, typer.Option(help="Folder to keep the encoded training data for reuse.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Train the scanner on the shared datasets' train splits and write a checkpoint."""
    _setup_logging(verbose)
    from longscan.models.config import ScannerConfig
    from longscan.scanning.features import N_FEATURES
    from longscan.training.args import TrainingArgs
    from longscan.training.pipeline import run_training

    try:
        args = TrainingArgs(
            model=ScannerConfig(
                d_model=d_model,
                n_layers=layers,
                n_features=N_FEATURES,
                bidirectional=bidirectional,
                dropout=dropout,
            ),
            seeds=tuple(int(s) for s in seeds.split(",")),
            max_per_source=max_per_source,
            epochs=epochs,
            lr=lr,
            seed=seed,
            threads=threads,
        )
        report = run_training(args, out, data_cache=data_cache)
    except (ValueError, FileNotFoundError) as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps({k: report[k] for k in ("dev_metrics", "seconds_total")}))
    console.print(f"wrote {out}", highlight=False)


@app.command()
def benchmarks() -> None:
    """List the benchmark names that `eval` accepts."""
    from longscan.bench.builders import BENCHMARKS

    for name, description in BENCHMARKS.items():
        typer.echo(f"{name}\t{description}")


@app.command()
def retrievers() -> None:
    """List the retriever names that `ask` and `eval` accept."""
    from longscan.retrievers import available

    for name in available():
        typer.echo(name)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
