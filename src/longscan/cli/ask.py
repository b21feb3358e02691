"""``longscan ask``, and how an answer and its evidence show on a terminal (``bank ask``
shows its answers the same way)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from longscan.cli.common import (
    CONTEXT_CHARS,
    AnswererName,
    AsJson,
    ContextChars,
    LLMConfigFile,
    LLMModel,
    LLMUrl,
    Verbose,
    answerer_name,
    console,
    errors,
    fail,
    llm_settings,
    printable,
    progress_bar,
    setup_logging,
)
from longscan.selection import BUDGET_WORDS

if TYPE_CHECKING:
    from longscan.answering.pipelines import Answer
    from longscan.documents import Document, Evidence


def ask(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files (text, Markdown, PDF, HTML, DOCX) or directories to search; "
            "- reads standard input."
        ),
    ],
    query: Annotated[str, typer.Option("--query", "-q", help="The question.")],
    retriever: Annotated[
        str, typer.Option("--retriever", "-r", help="Retriever name (see `longscan retrievers`).")
    ] = "",
    answerer: AnswererName = None,
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", "-k", min=1, help="Evidence units kept at most, best first."),
    ] = None,
    budget_words: Annotated[
        int,
        typer.Option(min=1, help="Keep the best units while their words fit this budget."),
    ] = BUDGET_WORDS,
    paragraphs: Annotated[
        bool,
        typer.Option(
            help="Read each kept sentence in its whole paragraph (the sentence alone where "
            "the paragraph does not fit --budget-words). Measured with the local model: "
            "better answers to a question one passage answers, fewer to one that joins "
            "several, never below another retriever's evidence; --no-paragraphs gives the "
            "sentences alone.",
        ),
    ] = True,
    widened: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="With --paragraphs, widen only the best this many units, the others read "
            "alone (1: measured no worse than plain sentences on single- and multi-hop "
            "questions; default: every unit).",
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(
            help="Keep only evidence scored above this (0 drops the units BM25 scores 0: "
            "no query word in them); the scale is the retriever's."
        ),
    ] = None,
    hidden: Annotated[
        bool, typer.Option(help="Also read hidden files and folders inside directories.")
    ] = False,
    abstain: Annotated[
        bool,
        typer.Option(
            help="Say 'no evidence found' (and ask no answerer) when the re-scorer judges "
            "none of the best evidence an answer (a calibrated threshold); --no-abstain "
            "always answers.",
        ),
    ] = True,
    as_json: AsJson = False,
    context: ContextChars = CONTEXT_CHARS,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    verbose: Verbose = False,
) -> None:
    """Answer a question from its evidence, citing it: the answer, then each piece of
    evidence (numbered as the answer cites it) with document, offsets, score and context."""
    setup_logging(verbose)
    from longscan.answering.answerers import get_answerer
    from longscan.documents import DocumentError
    from longscan.encoders.cache import ExportUnavailable
    from longscan.pipeline import Pipeline
    from longscan.readers.files import read_paths
    from longscan.retrievers.base import validate_query
    from longscan.retrievers.registry import DEFAULT_RETRIEVER

    retriever = retriever or DEFAULT_RETRIEVER
    try:
        validate_query(query)
        documents = read_paths(paths, hidden=hidden)
        chosen = get_answerer(answerer_name(answerer), llm_settings(llm, llm_model, llm_config))
        pipeline = Pipeline(
            retriever,
            chosen,
            top_k=top_k,
            budget_words=budget_words,
            min_score=min_score,
            paragraph=paragraphs,
            widened=widened,
            abstain=abstain,
        )
    except (DocumentError, ValueError, RuntimeError) as error:
        raise fail(str(error)) from None
    try:
        with progress_bar("encoding sentences") as advance:
            pipeline.prepare(documents, advance)
        with errors.status(f"reading {len(documents)} document(s) with {retriever}…"):
            found = pipeline.find(query, documents)
        with errors.status(f"{chosen.name} is answering…") if chosen else nullcontext():
            answer = pipeline.respond(found)
    except ExportUnavailable as error:
        raise fail(str(error)) from None
    if as_json:
        payload = {"question": query, "retriever": retriever, **answer.to_json()}
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print_answer(query, retriever, answer, documents, context)
    if chosen is None and not as_json:
        errors.print(
            "\n[dim]Evidence only (--answerer none): `--answerer auto` answers from it.[/]",
            highlight=False,
        )
    if answer.error is not None:
        raise fail(f"the evidence is above; the answerer gave no answer: {answer.error}", code=1)


def print_answer(
    query: str,
    retriever_name: str,
    answer: Answer,
    documents: Sequence[Document],
    context: int,
) -> None:
    """The answer (or why there is none), what it cites and what its evidence does not back,
    then the evidence it was given."""
    if answer.abstained:
        console.print(
            Text.assemble(
                ("No evidence found", "bold red"),
                ": the re-scorer judges none of the best evidence an answer (below its "
                "threshold calibrated on the development split). The closest evidence "
                "follows.",
            ),
            highlight=False,
        )
    elif answer.text:
        cited = ", ".join(
            " ".join(filter(None, (c.doc_id, c.where, f"chars {c.start}–{c.end}")))
            for c in answer.citations
        )
        console.print(
            Text.assemble(
                ("Answer", "bold green"),
                f" ({printable(answer.answerer)}): {printable(answer.text.strip())}",
            )
        )
        console.print(Text(f"cites: {printable(cited or 'nothing')}", "dim"), highlight=False)
        for warning in answer.warnings:  # what the evidence given does not back
            console.print(
                Text.assemble(("unbacked", "bold yellow"), f": {printable(warning)}"),
                highlight=False,
            )
        console.print()
    _print_evidence(query, retriever_name, answer.evidence, documents, context, answer.span)


def _print_evidence(
    query: str,
    retriever_name: str,
    evidence: Sequence[Evidence],
    documents: Sequence[Document],
    context: int,
    span: Evidence | None = None,
) -> None:
    """Each unit with its number, place, score and highlighted surroundings (an extractive
    answer's ``span`` marked inside its unit); a table row also with the title, column
    header and row group that say what its figures are."""
    from longscan.tables import table_context

    by_id = {document.id: document for document in documents}
    console.print(Text.assemble((printable(query), "bold"), f"  ({printable(retriever_name)})"))
    for number, item in enumerate(evidence, start=1):
        document = by_id[item.doc_id]
        console.print(
            Text.assemble(
                "\n",
                (f"[{number}]", "bold cyan"),
                f" {printable(item.doc_id)} ",
                (f"{printable(item.where)}  " if item.where else "", "green"),
                (f"chars {item.start}–{item.end}  score {item.score:.4g}", "dim"),
            ),
            highlight=False,
        )
        table = table_context(document, item)
        if table:
            console.print(Text(f"table: {printable(table)}", "italic"), highlight=False)
        mark = None
        if span is not None and span.doc_id == item.doc_id and item.start <= span.start:
            mark = (span.start, span.end) if span.end <= item.end else None
        console.print(_highlighted(document.text, item.start, item.end, context, mark, item.found))


def _highlighted(
    text: str,
    start: int,
    end: int,
    context: int,
    mark: tuple[int, int] | None = None,
    found: Sequence[tuple[int, int]] = (),
) -> Text:
    """The evidence in bold yellow inside ``context`` characters of surrounding text, on one
    line, control characters escaped (``printable``); ``mark``, a span inside the evidence
    (an extractive answer), in bold green and underlined. When the evidence is a paragraph
    read around the sentences ``found`` in it, the rest of the paragraph is plain yellow."""
    left = max(0, start - context)
    right = min(len(text), end + context)

    def line(part: str) -> str:
        return printable(part.replace("\r\n", " ").replace("\n", " ").replace("\r", " "))

    def style(at: int) -> str:
        if mark is not None and mark[0] <= at < mark[1]:
            return "bold green underline"
        if not found or any(a <= at < b for a, b in found):
            return "bold yellow"
        return "yellow"

    inner = (*(mark or ()), *(edge for span in found for edge in span))
    cuts = sorted({start, end, *(edge for edge in inner if start < edge < end)})
    shown = Text()
    shown.append(("…" if left else "") + line(text[left:start]), style="dim")
    for piece_start, piece_end in zip(cuts, cuts[1:], strict=False):
        shown.append(line(text[piece_start:piece_end]), style=style(piece_start))
    shown.append(line(text[end:right]) + ("…" if right < len(text) else ""), style="dim")
    return shown
