"""The synthetic-data commands: ``synth`` writes labelled examples with an LLM,
``synth-pack`` packs them small enough to commit, ``synth-agree`` keeps those a reader
agrees with, ``synth-reword`` asks their questions in other words."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from longscan.answering.llm import LLMClient

LocalWriter = Annotated[
    bool,
    typer.Option(
        "--local",
        help="Start the local question writer (Qwen2.5-Coder 1.5B, one thread; extra "
        "\\[question-writer]) and use it.",
    ),
]
SourcesFolder = Annotated[
    Path | None,
    typer.Option(help="Folder holding the examples' source files (default: train-docs/)."),
]


def _writer(
    stack: ExitStack,
    command: str,
    llm: str | None,
    llm_model: str | None,
    llm_config: Path | None,
    local: bool,
    json_output: bool = False,
) -> LLMClient:
    """The client of the LLM that writes for ``command``: the local question writer, started
    for the life of ``stack`` (with ``json_output``, a 16k window and JSON replies), or the
    configured server.

    Raises:
        typer.Exit: the writer cannot start, or no LLM is configured (said on stderr).
    """
    from longscan.answering.llm import HOW_TO_ADD_AN_LLM, LLMClient

    try:
        if local:
            window = 16_384 if json_output else None
            llm, llm_model = start_local_llm(stack, context_tokens=window, writer=True)
        overrides = {"json_mode": "json_object_schema"} if local and json_output else {}
        writer = llm_settings(llm, llm_model, llm_config, **overrides)
    except (RuntimeError, ValueError) as error:
        raise fail(str(error)) from None
    if writer is None:
        raise fail(f"{command} needs an LLM. {HOW_TO_ADD_AN_LLM}")
    return LLMClient(writer)


def synth(
    paths: Annotated[list[Path], typer.Argument(help="Long documents (files or folders).")],
    out: Annotated[Path, typer.Option(help="JSONL file of examples to write.")],
    strategy: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy", "-s", help="chunk, table, pair or link; repeatable (default link)."
        ),
    ] = None,
    count: Annotated[int, typer.Option(min=1, help="Examples to attempt per strategy.")] = 100,
    chunk_sentences: Annotated[int, typer.Option(min=2)] = 20,
    window_sentences: Annotated[int, typer.Option(min=4)] = 200,
    min_tokens: Annotated[int, typer.Option(min=1, help="Shortest example span.")] = 2_000,
    max_tokens: Annotated[int, typer.Option(min=1, help="Longest example span.")] = 10_000,
    seed: Annotated[int, typer.Option()] = 0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Estimate calls and tokens; call nothing.")
    ] = False,
    decontaminate: Annotated[
        bool,
        typer.Option(
            help="Drop examples sharing >1% of sentences with benchmarks and the data's corpus/."
        ),
    ] = True,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    local: LocalWriter = False,
    verbose: Verbose = False,
) -> None:
    """Turn long documents into labelled training examples with an LLM (chunk-, pair- or
    link-based, as in the SPScanner paper) for `longscan train --synthetic`. Every call is
    cached, so an interrupted run resumes without repeating calls."""
    setup_logging(verbose)
    from longscan.answering.llm import LLMError
    from longscan.documents import DocumentError
    from longscan.training import synthetic as syn

    settings = syn.SynthSettings(
        chunk_sentences, window_sentences, min_tokens, max_tokens, seed=seed
    )
    try:
        requests = syn.plan_runs(paths, strategy or ["link"], count, settings)
    except (DocumentError, ValueError) as error:
        raise fail(str(error)) from None
    estimate = syn.estimate(requests, settings)
    console.print(
        f"plan: {len(requests)} examples; at most {json.dumps(estimate)}", highlight=False
    )
    if dry_run:
        return
    fingerprints = None
    if decontaminate:
        from longscan.training.decontamination import evaluation_fingerprints

        try:
            fingerprints = evaluation_fingerprints(corpus=True)
        except FileNotFoundError as error:
            raise fail(f"{error}; pass --no-decontaminate to skip the check") from None
    with ExitStack() as stack:
        client = _writer(stack, "synth", llm, llm_model, llm_config, local, json_output=True)
        try:
            written, stats = syn.generate_into(out, client, requests, settings, fingerprints)
        except LLMError as error:
            raise fail(f"{error} (rerun to resume: finished calls are cached)") from None
    console.print_json(
        json.dumps(
            {"examples": written, "strategies": stats.as_dict(), "usage": client.usage.as_dict()}
        )
    )
    console.print(f"wrote {out}", highlight=False)


def synth_pack(
    examples: Annotated[
        list[Path], typer.Argument(help="JSONL files written by `longscan synth`.")
    ],
    out: Annotated[Path, typer.Option(help="Packed JSONL to write (no document text).")],
    sources: SourcesFolder = None,
    stats: Annotated[
        Path | None,
        typer.Option(
            help="Also write the runs' counts here, summed over their .stats.json files "
            "(read after the examples, so they count at least every example packed)."
        ),
    ] = None,
) -> None:
    """Pack synthetic examples small enough to commit: each keeps its question, labels and
    offsets and names its source file and that file's SHA-256 instead of carrying its text;
    `longscan train --synthetic` reads either form. Files that a run is still writing are
    read up to their last whole line; ids must be unique across the files (runs with
    different seeds have different ids). An example asking the same question of the same
    chunks of the same source as an earlier one is left out and counted as repeated."""
    from longscan.training.synthetic_examples import pack_files

    try:
        packed, repeated = pack_files(examples, out, sources, stats)
    except (FileNotFoundError, ValueError) as error:
        raise fail(str(error)) from None
    console.print(
        f"packed {packed} examples into {out}; left out {repeated} repeated", highlight=False
    )


def synth_agree(
    examples: Annotated[
        list[Path], typer.Argument(help="JSONL files written by `longscan synth-pack`.")
    ],
    out: Annotated[Path, typer.Option(help="JSONL to write: the lines the reader agrees with.")],
    max_rank: Annotated[
        int,
        typer.Option(
            min=1,
            help="Keep an example when a labelled line is among the reader's first N of its "
            "chunk's lines.",
        ),
    ] = 1,
    reranker: Annotated[
        Path | None,
        typer.Option(help="Re-scorer folder that reads (default: the shipped one)."),
    ] = None,
    sources: SourcesFolder = None,
) -> None:
    """Keep the synthetic examples whose labels a reader agrees with (InPars' filter): the
    re-scorer ranks the lines of the chunk the writer was shown, and an example is kept when
    a labelled line is among its first --max-rank. Kept lines are copied unchanged; the
    counts, every example's rank and the reader's SHA-256 go to OUT.report.json."""
    from longscan.rerankers.abstention import shipped_judge
    from longscan.rerankers.cross_encoder import get_reranker
    from longscan.training.agreement import filter_examples, write_kept

    try:
        judge = shipped_judge() if reranker is None else get_reranker(str(reranker))
        kept, report = filter_examples(examples, judge, max_rank, sources)
    except (FileNotFoundError, ValueError) as error:
        raise fail(str(error)) from None
    write_kept(out, kept, report)
    console.print(
        f"kept {len(kept)} examples in {out}; dropped {report.dropped_count}: {report.dropped}",
        highlight=False,
    )


def synth_reword(
    examples: Annotated[
        list[Path], typer.Argument(help="JSONL files written by `longscan synth-pack`.")
    ],
    out: Annotated[Path, typer.Option(help="JSONL to write: the examples reworded.")],
    count: Annotated[int, typer.Option(min=1, help="Examples to reword, drawn with --seed.")] = 100,
    strategy: Annotated[
        str | None, typer.Option(help="Only the examples of this strategy (e.g. table).")
    ] = None,
    seed: Annotated[int, typer.Option()] = 0,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    local: LocalWriter = False,
    sources: SourcesFolder = None,
    verbose: Verbose = False,
) -> None:
    """Ask written examples' questions in other words, as someone who has not read the
    document asks them: an LLM rewords each question, shown its labelled lines, and a
    rewording is kept when it keeps every number of the question and puts at least one word
    it copied from those lines in other words. The labels stay; the kept lines go to OUT
    (packed, for `longscan train --synthetic`), the questions before and after and the drops
    to OUT.report.json. Calls are cached, so a rerun asks nothing again."""
    setup_logging(verbose)
    from longscan.answering.llm import LLMError
    from longscan.training.reword import reword_examples, write_reworded
    from longscan.training.synthetic_examples import train_docs

    try:
        texts = [path.read_text("utf-8") for path in examples]
        lines = [json.loads(line) for text in texts for line in text.split("\n") if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        raise fail(f"cannot read the examples: {error}") from None
    with ExitStack() as stack:
        client = _writer(stack, "synth-reword", llm, llm_model, llm_config, local)
        try:
            kept, report = reword_examples(
                lines, client, sources or train_docs(), count, seed, strategy
            )
        except (FileNotFoundError, KeyError, ValueError) as error:
            raise fail(f"not a packed example: {error}") from None
        except LLMError as error:
            raise fail(f"{error} (rerun to resume: finished calls are cached)") from None
    write_reworded(out, kept, report)
    console.print(
        f"kept {len(kept)} of {report.attempts} reworded in {out}; dropped {dict(report.dropped)}",
        highlight=False,
    )
