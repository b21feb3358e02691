"""The evaluation commands: ``eval`` scores retrievers on evidence, ``bench`` runs an
answer-level benchmark end to end; ``benchmarks`` and ``retrievers`` list what they take."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from longscan.cli.common import (
    LLMConfigFile,
    LLMModel,
    LLMUrl,
    Verbose,
    console,
    fail,
    llm_settings,
    setup_logging,
    start_local_llm,
)

QA_BENCHMARKS = (
    "loong",
    "leval-coursera",
    "leval-financial",
    "localize-hotpotqa",
    "localize-musique",
)
LocalLLM = Annotated[bool, typer.Option("--local", help="Start the small local model and use it.")]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Run on this Ray cluster (e.g. ray://head:10001, or auto); default: Ray embedded "
        "on this machine with a worker per core.",
    ),
]


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
    table_context: Annotated[
        bool,
        typer.Option(
            "--table-context/--units-only",
            help="Word budgets read each table row after its table's title, column header "
            "and group (units of the document, their words counted), as an answerer is "
            "shown them; the default counts the ranked units only.",
        ),
    ] = False,
    instruction: Annotated[
        str | None,
        typer.Option(
            help="Ask every query after this instruction and a blank line, as a prompt "
            "sends it: how well each retriever reads a query that carries one."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Folder for the JSON, markdown and plot.")
    ] = None,
    run_file: Annotated[
        Path | None,
        typer.Option(
            help="Write each retriever's sentence ranking as a TREC run (with several "
            "retrievers, each name joins the file name)."
        ),
    ] = None,
    qrels: Annotated[
        Path | None, typer.Option(help="Write the gold sentences as TREC qrels.")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Evaluate retrievers on a benchmark: budgeted, sentence-level and document-level
    metrics, and paired randomization tests of each retriever against the first."""
    setup_logging(verbose)
    from longscan.bench.runner import run_benchmark
    from longscan.evaluation.report import (
        comparison_table,
        headline_measures,
        significance_table,
    )

    try:
        run = run_benchmark(
            benchmark,
            retriever,
            split=split,
            target_words=target_words,
            max_items=max_items,
            seed=seed,
            out_dir=out,
            table_context=table_context,
            instruction=instruction,
            run_file=run_file,
            qrels_file=qrels,
        )
    except (ValueError, FileNotFoundError) as error:
        raise fail(str(error)) from None
    shown = headline_measures(run.results)
    console.print(comparison_table(run.results, shown, title=f"{benchmark} ({split})"))
    if run.significance:
        console.print(significance_table(run.significance))
    for path in run.files:
        console.print(f"wrote {path}", highlight=False)


def benchmarks() -> None:
    """List the benchmark names that `eval` accepts."""
    from longscan.bench.catalogue import BENCHMARKS

    for name, description in BENCHMARKS.items():
        typer.echo(f"{name}\t{description}")


def retrievers() -> None:
    """List the retriever names that `ask` and `eval` accept."""
    from longscan.retrievers import available
    from longscan.retrievers.registry import name_forms

    for name in [*available(), *name_forms()]:
        typer.echo(name)


def bench_command(
    benchmark: Annotated[
        str, typer.Argument(help=f"One of: {', '.join(QA_BENCHMARKS)}, ladder (EMB-S ladder).")
    ],
    system: Annotated[
        list[str] | None,
        typer.Option("--retriever", "-r", help="Retriever, or full-context; repeat to compare."),
    ] = None,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    local: LocalLLM = False,
    context_tokens: Annotated[
        int | None, typer.Option(min=512, help="The LLM's window in tokens (prompt budgets).")
    ] = None,
    budget_words: Annotated[int, typer.Option(min=10, help="Evidence words per question.")] = 1000,
    window_tokens: Annotated[
        int | None, typer.Option(min=256, help="Full-context window (default: the LLM's).")
    ] = None,
    max_items: Annotated[int | None, typer.Option(min=1)] = None,
    k: Annotated[int, typer.Option(min=1, help="Documents an LLM localisation returns.")] = 5,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Tokens per answer.")] = None,
    out: Annotated[Path, typer.Option(help="Folder for JSON and markdown.")] = Path("runs/qa"),
    ray_address: RayAddress = None,
    verbose: Verbose = False,
) -> None:
    """Run an answer-level benchmark end to end (answers, judge, scores, cost) and write a
    JSON report and a markdown table per system."""
    setup_logging(verbose)
    from longscan.answering.llm import HOW_TO_ADD_AN_LLM, LLMClient, LLMError

    if benchmark == "ladder":  # evidence access only: no LLM
        from longscan.bench.ladder import DEFAULT_RUNGS, run_ladder

        try:
            rows = run_ladder(
                out, DEFAULT_RUNGS, per_domain=max_items or 40, ray_address=ray_address
            )
        except (ValueError, FileNotFoundError) as error:
            raise fail(str(error)) from None
        console.print_json(json.dumps(rows))
        console.print(f"wrote {out / 'ladder.json'}", highlight=False)
        return
    if benchmark not in QA_BENCHMARKS:
        raise fail(f"unknown benchmark {benchmark!r}; choose one of {', '.join(QA_BENCHMARKS)}")
    from longscan.bench.qa import run_qa_benchmark

    with ExitStack() as stack:
        try:
            if local:
                llm, llm_model = start_local_llm(stack, context_tokens)
            settings = llm_settings(
                llm, llm_model, llm_config, context_tokens=context_tokens, max_tokens=max_tokens
            )
        except (RuntimeError, ValueError) as error:
            raise fail(str(error)) from None
        if settings is None:
            raise fail(f"this benchmark needs an LLM. {HOW_TO_ADD_AN_LLM}")
        for name in system or (["scanner"] if not benchmark.startswith("localize") else ["llm"]):
            client = LLMClient(settings)
            try:
                run = run_qa_benchmark(
                    benchmark, name, client, budget_words, window_tokens, max_items, k
                )
            except (LLMError, ValueError, FileNotFoundError) as error:
                raise fail(str(error)) from None
            console.print(run.summary["markdown"], highlight=False)
            console.print(f"usage: {json.dumps(run.usage)}", highlight=False)
            for path in run.write(out):
                console.print(f"wrote {path}", highlight=False)
