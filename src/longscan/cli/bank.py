"""``longscan bank``: a persistent memory bank of documents, added to, mended, searched and
asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from longscan.cli.ask import print_answer
from longscan.cli.common import (
    CONTEXT_CHARS,
    HELP_OPTIONS,
    AnswererName,
    AsJson,
    ContextChars,
    LLMConfigFile,
    LLMModel,
    LLMUrl,
    answerer_name,
    console,
    errors,
    fail,
    llm_settings,
    printable,
)
from longscan.selection import BUDGET_WORDS

bank_app = typer.Typer(
    help="A persistent memory bank of documents: add, remove, stats, search, check, repair.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
)
BankFolder = Annotated[
    Path | None,
    typer.Option(
        "--bank",
        help="The bank's folder (default: bank/ in LONGSCAN_DATA_DIR or the user data folder).",
    ),
]


def _bank_folder(given: Path | None) -> Path:
    """The bank given, else ``bank/`` in the data folder (``settings.Folders``)."""
    from longscan.settings import Folders

    return given if given is not None else Folders().data_dir / "bank"


@bank_app.command("add")
def bank_add(
    paths: Annotated[
        list[Path],
        typer.Argument(exists=True, help="Files (text, Markdown, PDF, HTML, DOCX) or folders."),
    ],
    bank: BankFolder = None,
    domain: Annotated[str, typer.Option(help="A label to group documents.")] = "",
    source: Annotated[str, typer.Option(help="Where the documents come from.")] = "",
    sentence_vectors: Annotated[
        bool,
        typer.Option(
            "--sentence-vectors/--no-sentence-vectors",
            help="Also cache the scanner's sentence vectors of each document's first 4,000 "
            "tokens, so two-stage search encodes nothing at query time (ingestion is slower).",
        ),
    ] = True,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="Encode on Ray (extra \\[cluster]): local starts Ray on this machine with a "
            "worker per core; an address joins that cluster (ray://head:10001, or auto). "
            "Default: in this process, without Ray.",
        ),
    ] = None,
    hidden: Annotated[
        bool, typer.Option(help="Also add hidden files and folders inside directories.")
    ] = False,
    encoder: Annotated[
        str | None,
        typer.Option(
            help="The dense index's sentence-transformers model (a name in the local Hugging "
            "Face cache, or a folder; safetensors only), chosen when the bank is created and "
            "kept: later adds and searches use it. Default: the packaged MiniLM.",
        ),
    ] = None,
    prefix: Annotated[
        str,
        typer.Option(
            help="Put this before every key (e.g. setB/): files whose relative paths are keys "
            "of documents from another folder are then added beside those, not over them.",
        ),
    ] = "",
) -> None:
    """Add or update documents (keyed by their path relative to the folder given) and index
    them. A document whose key is in the bank from another file replaces that one, with a
    warning naming both files ("replaced" in the summary); --prefix keeps both.

    Files stream one at a time and are encoded in batches, here or, with --ray-address, by
    Ray workers (a worker that dies is replaced and its batch redone); this process writes
    the indexes, batch by batch. Running it again after an interruption resumes: committed
    documents are skipped."""
    from longscan.bank import MemoryBank
    from longscan.bank.errors import BankError
    from longscan.bank.ingest import ingest
    from longscan.bank.records import from_files
    from longscan.bank.search import SCANNED_TOKENS
    from longscan.documents import DocumentError
    from longscan.parallel import execution
    from longscan.readers.files import iter_paths

    scanned = SCANNED_TOKENS if sentence_vectors else None
    try:
        store = MemoryBank(_bank_folder(bank), encoder=encoder)  # only add creates a bank
        with execution(ray_address):
            files = iter_paths(paths, hidden=hidden)
            report = ingest(store, from_files(files, prefix), source, domain,
                            scanned_tokens=scanned, total=len(files))  # fmt: skip
    except (DocumentError, ValueError, BankError) as error:
        raise fail(str(error)) from None
    console.print_json(json.dumps({**report.as_dict(), "documents": len(store)}))


@bank_app.command("remove")
def bank_remove(
    keys: Annotated[list[str], typer.Argument(help="Document keys (as shown by search).")],
    bank: BankFolder = None,
) -> None:
    """Remove documents from the bank and its indexes; exit 1 when a key is not in the bank
    (the others are removed)."""
    from longscan.bank import MemoryBank
    from longscan.bank.errors import BankError

    try:
        store = MemoryBank(_bank_folder(bank), create=False)
        wanted = list(dict.fromkeys(keys))
        unknown = [key for key in wanted if store.id_of(key) is None]
        removed = store.remove(wanted)
        summary = {"removed": removed, "unknown": unknown, "documents": len(store)}
        console.print_json(json.dumps(summary))
    except BankError as error:
        raise fail(str(error)) from None
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise fail(f"not in the bank: {names} (keys as `longscan bank search` shows them)", 1)


@bank_app.command("stats")
def bank_stats(bank: BankFolder = None) -> None:
    """Documents and tokens per domain, what is not indexed yet, and each index's entries."""
    from longscan.bank import MemoryBank
    from longscan.bank.errors import BankError

    try:
        console.print_json(json.dumps(MemoryBank(_bank_folder(bank), create=False).stats()))
    except BankError as error:
        raise fail(str(error)) from None


@bank_app.command("check")
def bank_check(bank: BankFolder = None) -> None:
    """Compare the documents with the BM25 and dense indexes, id by id; exit 1 unless every
    document is in both, once (`longscan bank repair` mends that)."""
    from longscan.bank import MemoryBank
    from longscan.bank.errors import BankError

    folder = _bank_folder(bank)
    try:
        report = MemoryBank(folder, create=False).check()
    except BankError as error:
        raise fail(str(error)) from None
    console.print_json(json.dumps(report.as_dict()))
    if not report.ok:
        found = "; ".join(report.problems)
        raise fail(f"{found}: `longscan bank repair --bank {folder}` mends that", code=1)


@bank_app.command("repair")
def bank_repair(bank: BankFolder = None) -> None:
    """Make both indexes agree with the documents: rebuild an unreadable index, drop entries
    of deleted documents, index again what is missing. Prints what it found."""
    from longscan.bank import MemoryBank
    from longscan.bank.errors import BankError

    try:
        store = MemoryBank(_bank_folder(bank), create=False)
        found = store.repair()
        after = store.check()
    except BankError as error:
        raise fail(str(error)) from None
    console.print_json(json.dumps({"found": found.as_dict(), "ok": after.ok}))
    if not after.ok:
        raise typer.Exit(1)


@bank_app.command("search")
def bank_search(
    query: Annotated[str, typer.Option("--query", "-q", help="The question.")],
    bank: BankFolder = None,
    k: Annotated[int, typer.Option("-k", min=1, help="Documents to return.")] = 10,
    method: Annotated[str, typer.Option(help="First stage: bm25, dense or hybrid.")] = "hybrid",
    depth: Annotated[int, typer.Option(min=1, help="Candidates the scanner reads.")] = 50,
    two_stage: Annotated[
        bool, typer.Option("--two-stage/--first-stage", help="Let the scanner rank candidates.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Find the evidence documents (and, two-stage, sentences with offsets) for a question."""
    from longscan.bank import MemoryBank, search
    from longscan.bank.errors import BankError
    from longscan.retrievers.base import validate_query

    try:
        validate_query(query)
        store = MemoryBank(_bank_folder(bank), create=False)
        scanner = None
        if two_stage:
            from longscan.scanning.scanner import Scanner

            scanner = Scanner.from_pretrained(cache=store.sentence_cache())
        hits = search(store, query, k, method, depth, scanner)  # type: ignore[arg-type]
    except (ValueError, BankError) as error:
        raise fail(str(error)) from None
    if as_json:
        payload = [hit.to_json() for hit in hits]
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    for rank, hit in enumerate(hits, start=1):  # keys and text as Text: no markup, no escapes
        console.print(
            Text.assemble(
                (f"{rank}.", "bold cyan"),
                f" [{hit.doc_id}] {printable(hit.key)}  ",
                (f"{hit.score:.4g}", "dim"),
            ),
            highlight=False,
        )
        for item in hit.evidence:
            text = printable(" ".join(item.text.split())[:160])
            console.print(
                Text.assemble(
                    "    ",
                    (f"{printable(item.where)}  " if item.where else "", "green"),
                    (f"chars {item.start}–{item.end}", "dim"),
                    f" {text}",
                ),
                highlight=False,
            )


@bank_app.command("ask")
def bank_ask(
    query: Annotated[str, typer.Option("--query", "-q", help="The question.")],
    bank: BankFolder = None,
    answerer: AnswererName = None,
    k: Annotated[int, typer.Option("-k", min=1, help="Documents to read evidence from.")] = 5,
    method: Annotated[str, typer.Option(help="First stage: bm25, dense or hybrid.")] = "hybrid",
    depth: Annotated[int, typer.Option(min=1, help="Candidates the scanner reads.")] = 50,
    budget_words: Annotated[
        int,
        typer.Option(
            min=1,
            help="Keep the best sentences, each read in its paragraph where that fits, while "
            "their words fit this budget.",
        ),
    ] = BUDGET_WORDS,
    abstain: Annotated[
        bool, typer.Option(help="Say 'no evidence found' when the re-scorer judges none an answer.")
    ] = True,
    as_json: AsJson = False,
    context: ContextChars = CONTEXT_CHARS,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
) -> None:
    """Answer a question from the bank's best documents, citing bank ids and offsets: the
    same pipeline as `longscan ask`, over the bank's two-stage search."""
    from longscan.answering.answerers import get_answerer
    from longscan.bank import MemoryBank
    from longscan.bank.answer import ask as ask_bank
    from longscan.bank.errors import BankError
    from longscan.pipeline import Pipeline
    from longscan.retrievers.base import validate_query
    from longscan.scanning.scanner import Scanner

    try:
        validate_query(query)
        store = MemoryBank(_bank_folder(bank), create=False)
        chosen = get_answerer(answerer_name(answerer), llm_settings(llm, llm_model, llm_config))
        pipeline = Pipeline(None, chosen, budget_words=budget_words, abstain=abstain)
        scanner = Scanner.from_pretrained(cache=store.sentence_cache())
        with errors.status(f"searching the bank ({len(store):,} documents)…"):
            result = ask_bank(store, query, pipeline, scanner, k=k, method=method, depth=depth)  # type: ignore[arg-type]
    except (ValueError, RuntimeError, BankError) as error:
        raise fail(str(error)) from None
    answer = result.answer
    if as_json:
        payload = {"question": query, "retriever": "bank", **answer.to_json()}
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print_answer(query, "bank", answer, result.documents, context)
    if answer.error is not None:
        raise fail(f"the evidence is above; the answerer gave no answer: {answer.error}", code=1)
