"""The ``longscan`` command line: ask a long document, evaluate retrievers on benchmarks.

Heavy libraries are imported inside the commands, so ``longscan --help`` is instant.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
import unicodedata
from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

if TYPE_CHECKING:
    from longscan.answering.llm import LLMClient, LLMConfig
    from longscan.answering.pipelines import Answer
    from longscan.bench.qa import QARun
    from longscan.documents import Document, Evidence

# Unicode categories shown escaped: format characters (bidirectional controls such as
# U+202E, which reorder what follows; zero-width and tag characters, which hide text) and
# line and paragraph separators. The zero-width joiner and non-joiner stay: they shape
# letters (Persian, Indic scripts) and emoji, and move or hide nothing.
_ESCAPED_CATEGORIES = frozenset({"Cf", "Zl", "Zp"})
_JOINERS = frozenset({0x200C, 0x200D})


class _Escapes(dict[int, str]):
    """``str.translate``'s table for ``printable``, filled as characters are met: control
    characters (C0 but tab and newline, DEL, C1) become ``\\xNN``, those of
    ``_ESCAPED_CATEGORIES`` ``\\uNNNN`` (``\\UNNNNNNNN`` past the BMP), others stay."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if (code < 0x20 or 0x7F <= code < 0xA0) and code not in (9, 10):
            shown = f"\\x{code:02x}"
        elif unicodedata.category(char) in _ESCAPED_CATEGORIES and code not in _JOINERS:
            shown = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
        else:
            shown = char
        self[code] = shown
        return shown


_ESCAPES = _Escapes()


def printable(text: str) -> str:
    """``text`` with its control and format characters shown as escapes (``\\x1b``,
    ``\\u202e``): text from a document, a file name or an LLM reaches the terminal as text,
    never as escape sequences (which could retitle the window or clear the screen) or as
    bidirectional controls (which display text in another order than it has). ``--json``
    keeps the text verbatim, so offsets index it exactly."""
    return text.translate(_ESCAPES)


def _print_error(message: str) -> None:
    """``error: message`` on stderr, whole: read as text (no markup), never wrapped (rich
    would cut a long path over lines at the console's width, 80 columns with no terminal)."""
    shown = Text.assemble(("error:", "bold red"), " ", printable(message))
    errors.print(shown, soft_wrap=True, highlight=False)


# click's base of usage errors, whether typer vendors click (0.2x) or imports it (0.12)
_CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class _WholeErrors(TyperGroup):
    """Typer's group, printing usage errors (a missing path, a bad value) as plain lines
    that are never wrapped, where typer draws a panel that rich wraps at 80 columns."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _CLICK_EXCEPTION as error:
            if type(error).__name__ != "NoArgsIsHelpError":  # its help is already printed
                _print_usage_error(error)
            sys.exit(error.exit_code)
        except typer.Abort:
            errors.print("Aborted.", highlight=False)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _print_usage_error(error: Any) -> None:
    """The usage line, where to find help, and ``error: message``, each whole."""
    context = getattr(error, "ctx", None)
    if context is not None:
        hint = f"Try '{context.command_path} {context.help_option_names[0]}' for help."
        for line in (context.get_usage(), hint):
            errors.print(Text(line), soft_wrap=True, highlight=False)
    _print_error(error.format_message())


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    cls=_WholeErrors,
    help="Question answering over very long documents: find the evidence, cite it by offsets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
)


def _print_version(asked: bool) -> None:
    if asked:
        from longscan import __version__

        typer.echo(f"longscan {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(
            help="Where the encoders and the scanner run: cpu, cuda, cuda:1, mps... "
            "(or LONGSCAN_DEVICE; default: a GPU when torch sees one, else the CPU).",
        ),
    ] = None,
) -> None:
    """Question answering over very long documents: find the evidence, cite it by offsets."""
    if device is not None:
        import os

        from longscan.devices import DEVICE_VARIABLE, torch_device

        os.environ[DEVICE_VARIABLE] = device
        torch_device.cache_clear()
        try:
            torch_device()
        except ValueError as error:
            raise _fail(str(error).replace(f"{DEVICE_VARIABLE}=", "--device ")) from None


console = Console(width=None if Console().is_terminal else 200)  # logs keep whole tables
errors = Console(stderr=True)

CONTEXT_CHARS = 160
LLM_URL_OPTION = typer.Option(
    "--llm", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (or LONGSCAN_LLM_URL)."
)
LLM_MODEL_OPTION = typer.Option("--llm-model", help="Model name (or LONGSCAN_LLM_MODEL).")
LLM_CONFIG_OPTION = typer.Option(
    "--llm-config", help="TOML file with an \\[llm] table (default ~/.config/longscan/llm.toml)."
)
LLMUrl = Annotated[str | None, LLM_URL_OPTION]
LLMModel = Annotated[str | None, LLM_MODEL_OPTION]
LLMConfigFile = Annotated[Path | None, LLM_CONFIG_OPTION]
LocalLLM = Annotated[bool, typer.Option("--local", help="Start the small local model and use it.")]
HotpotQAQuestions = Annotated[
    int | None, typer.Option(min=0, help="HotpotQA training questions (default: all).")
]
MuSiQueQuestions = Annotated[
    int | None, typer.Option(min=0, help="MuSiQue training questions (default: all).")
]
AnswererName = Annotated[
    str,
    typer.Option(
        "--answerer",
        "-a",
        envvar="LONGSCAN_ANSWERER",
        help="Who answers from the evidence: auto (a configured --llm server, else the "
        "local instruct model when installed, else the extractive reader), llm, local, "
        "extractive, or none (evidence only).",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Log informational messages on stderr, not only warnings."
    ),
]
SourcesFolder = Annotated[
    Path | None,
    typer.Option(help="Folder holding the examples' source files (default: train-docs/)."),
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    _print_error(message)
    return typer.Exit(code)


def _start_local_llm(
    stack: ExitStack, context_tokens: int | None = None, writer: bool = False
) -> tuple[str, str]:
    """Start a local model for the life of ``stack``: its ``(url, model name)``. The answerer
    by default; with ``writer``, the question writer on one thread (two servers, or a server
    beside a training job, then share the two cores without slowing each other several
    times over). ``context_tokens`` None keeps the server's own default window."""
    from longscan.answering.local import ANSWERER, QUESTION_WRITER, LocalServer

    model = QUESTION_WRITER if writer else ANSWERER
    window = {} if context_tokens is None else {"context_tokens": context_tokens}
    server = LocalServer(threads=1 if writer else 2, model=model, **window)
    return stack.enter_context(server), model.name


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s: %(message)s",
        stream=sys.stderr,
    )


def _llm_config(
    url: str | None, model: str | None, config_file: Path | None, **overrides: Any
) -> LLMConfig | None:
    from longscan.answering.llm import resolve_config

    return resolve_config(url, model, config_file, **overrides)


def _highlighted(
    text: str, start: int, end: int, context: int, mark: tuple[int, int] | None = None
) -> Text:
    """The evidence in bold yellow inside ``context`` characters of surrounding text, on one
    line, control characters escaped (``printable``); ``mark``, a span inside the evidence
    (an extractive answer), in bold green and underlined."""
    left = max(0, start - context)
    right = min(len(text), end + context)

    def line(part: str) -> str:
        return printable(part.replace("\r\n", " ").replace("\n", " ").replace("\r", " "))

    inner_start, inner_end = mark or (end, end)
    shown = Text()
    shown.append(("…" if left else "") + line(text[left:start]), style="dim")
    shown.append(line(text[start:inner_start]), style="bold yellow")
    shown.append(line(text[inner_start:inner_end]), style="bold green underline")
    shown.append(line(text[inner_end:end]), style="bold yellow")
    shown.append(line(text[end:right]) + ("…" if right < len(text) else ""), style="dim")
    return shown


@app.command()
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
    answerer: AnswererName = "auto",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Evidence units kept.")] = 5,
    budget_words: Annotated[
        int | None,
        typer.Option(min=1, help="Keep the best units while their words fit this budget."),
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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines.")] = False,
    context: Annotated[
        int, typer.Option(min=0, help="Characters of context around each hit.")
    ] = CONTEXT_CHARS,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    verbose: Verbose = False,
) -> None:
    """Answer a question from its evidence, citing it: the answer, then each piece of
    evidence (numbered as the answer cites it) with document, offsets, score and context."""
    _setup_logging(verbose)
    from longscan.answering.answerers import get_answerer
    from longscan.documents import DocumentError, read_paths
    from longscan.pipeline import Pipeline
    from longscan.retrievers.base import validate_query
    from longscan.retrievers.registry import DEFAULT_RETRIEVER

    retriever = retriever or DEFAULT_RETRIEVER
    try:
        validate_query(query)
        documents = read_paths(paths, hidden=hidden)
        chosen = get_answerer(answerer, _llm_config(llm, llm_model, llm_config))
        pipeline = Pipeline(
            retriever,
            chosen,
            top_k=top_k,
            budget_words=budget_words,
            min_score=min_score,
            abstain=abstain,
        )
    except (DocumentError, ValueError, RuntimeError) as error:
        raise _fail(str(error)) from None
    with _progress_bar("encoding sentences") as advance:
        pipeline.prepare(documents, advance)
    with errors.status(f"reading {len(documents)} document(s) with {retriever}…"):
        found = pipeline.find(query, documents)
    with errors.status(f"{chosen.name} is answering…") if chosen else nullcontext():
        answer = pipeline.respond(found)
    if as_json:
        payload = {"question": query, "retriever": retriever, **answer.to_json()}
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        _print_answer(query, retriever, answer, documents, context)
    if chosen is None and not as_json:
        errors.print(
            "\n[dim]Evidence only (--answerer none): `--answerer auto` answers from it.[/]",
            highlight=False,
        )
    if answer.error is not None:
        raise _fail(f"the evidence is above; the answerer gave no answer: {answer.error}", code=1)


def _progress_bar(description: str) -> Any:
    """A context manager giving a ``(done, total)`` callback that draws a bar on stderr from
    its first call (nothing shows for work already done, and nothing when stderr is not a
    terminal)."""
    from contextlib import contextmanager

    from longscan.progress import Bar

    @contextmanager
    def drawn() -> Any:
        with ExitStack() as stack:
            bar: list[Any] = []

            def advance(done: int, total: int) -> None:
                if not bar:
                    bar.append(stack.enter_context(Bar(description, total=total)))
                bar[0].update(completed=done)

            yield advance

    return drawn()


def _print_answer(
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
        console.print(_highlighted(document.text, item.start, item.end, context, mark))


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
    verbose: Verbose = False,
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
            table_context=table_context,
            instruction=instruction,
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
    lengths: Annotated[
        str,
        typer.Option(
            help="Lengths of the documents built from the datasets, in words, comma-separated; "
            "a short one (150) gives single SQuAD paragraphs and the questions' own "
            "paragraphs alone."
        ),
    ] = "1500,3800,7700",
    bidirectional: Annotated[
        bool, typer.Option("--bidirectional/--causal", help="Add the reversed pass.")
    ] = False,
    read_twice: Annotated[
        bool,
        typer.Option(
            "--read-twice/--read-once",
            help="Read the document twice and score the second reading (causal only).",
        ),
    ] = False,
    feature_skip: Annotated[
        bool,
        typer.Option(
            "--feature-skip/--no-feature-skip",
            help="Add a linear score of the cosine and features to every logit (wide path).",
        ),
    ] = False,
    features: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Read the first N per-sentence features (default: the shipped layout, the "
            "first 16 and window_dense_rank; 18 is the first 16 and the two query-part "
            "columns).",
        ),
    ] = None,
    feature: Annotated[
        list[str] | None,
        typer.Option(
            help="Also read this per-sentence feature, by name (repeatable; e.g. "
            "--features 18 --feature window_dense_rank).",
        ),
    ] = None,
    d_model: Annotated[int, typer.Option(min=8)] = 256,
    layers: Annotated[int, typer.Option(min=1)] = 4,
    lr: Annotated[
        float | None,
        typer.Option(min=0.0, help="Peak learning rate (default 2e-3; 1e-4 with --token-level)."),
    ] = None,
    dropout: Annotated[float, typer.Option(min=0.0, max=0.9)] = 0.1,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    data_cache: Annotated[
        Path | None, typer.Option(help="Folder to keep the encoded training data for reuse.")
    ] = None,
    datasets: Annotated[
        str, typer.Option(help="Dataset sources, comma-separated; empty for synthetic only.")
    ] = "squad,hotpotqa,musique",
    synthetic: Annotated[
        list[Path] | None,
        typer.Option(
            "--synthetic",
            help="`longscan synth` JSONL to mix in; repeatable (a file named twice weighs twice).",
        ),
    ] = None,
    named_synthetic: Annotated[
        list[Path] | None,
        typer.Option(
            "--named-synthetic",
            help="`longscan synth` JSONL over SEC filings: mix in a copy of each example whose "
            "question names the filer (from its cover page); repeatable.",
        ),
    ] = None,
    named_among: Annotated[
        int,
        typer.Option(
            min=0,
            help="Read each --named-synthetic copy beside this many other filers' spans "
            "whose questions share its words, as a collection of filings is read.",
        ),
    ] = 0,
    init_from: Annotated[
        Path | None,
        typer.Option(
            "--init-from",
            "--init",
            help="Fine-tune this checkpoint (e.g. the shipped one) instead of a new model.",
        ),
    ] = None,
    token_level: Annotated[
        bool,
        typer.Option(
            "--token-level",
            help="Fine-tune a token-level scanner (a checkpoint from `longscan "
            "spscanner-convert`, given by --init) with the paper's recipe; needs a GPU "
            "unless the network is tiny.",
        ),
    ] = False,
    batch_size: Annotated[
        int, typer.Option(min=1, help="--token-level: examples per optimiser step.")
    ] = 64,
    listwise: Annotated[
        float,
        typer.Option(
            min=0.0, help="Weight of a listwise softmax term beside the BCE (0: BCE alone)."
        ),
    ] = 0.0,
    sentence_labels: Annotated[
        bool,
        typer.Option(
            "--sentence-labels/--paragraph-labels",
            help="MuSiQue gold: the sentence answering each hop, or the whole paragraph.",
        ),
    ] = False,
    encoder: Annotated[
        str | None,
        typer.Option(
            help="Sentence vectors the scanner reads: all-MiniLM-L6-v2, or "
            "all-MiniLM-L6-v2+int8 (its int8 export: encodes about twice as fast). "
            "Default: --init-from's, else all-MiniLM-L6-v2.",
        ),
    ] = None,
    encoder_adapter: Annotated[
        Path | None,
        typer.Option(
            help="A `longscan train-encoder` folder: the encoder reads with its fine-tuned "
            "updates, and the checkpoint keeps a copy. Default: --init-from's, else none.",
        ),
    ] = None,
    context_tokens: Annotated[
        int | None,
        typer.Option(
            min=8,
            max=512,
            help="Tokens per window of paragraph context the encoder reads (fewer: faster). "
            "Default: --init-from's, else 256.",
        ),
    ] = None,
    table_context: Annotated[
        bool | None,
        typer.Option(
            "--table-context/--no-table-context",
            help="The encoder reads a table row after its table's title, column header and "
            "row group. Default: --init-from's, else off.",
        ),
    ] = None,
    evidence_first: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of the --synthetic examples cut to begin at their first labelled "
            "sentence (their spans never do otherwise).",
        ),
    ] = 0.0,
    row_context_negative: Annotated[
        bool,
        typer.Option(
            "--row-context-negative",
            help="A synthetic example's labelled title, column header or group line of one of "
            "its labelled table rows is a negative: evidence carries a row's context with it.",
        ),
    ] = False,
    instruction_copies: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of the training examples also trained on with an instruction before "
            "their question, as prompts send it (generic instructions composed by "
            "longscan.training.instructions, two in three naming a topic from the example's "
            "units that are not evidence).",
        ),
    ] = 0.0,
    verbose: Verbose = False,
) -> None:
    """Train the scanner on the shared datasets' train splits and/or synthetic examples, and
    write a checkpoint; `--init-from` fine-tunes an existing one on your own domain."""
    _setup_logging(verbose)
    from longscan.models.config import ScannerConfig
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.scanning.features import FEATURE_NAMES, N_FEATURES, TRAINED_FEATURES
    from longscan.training.args import TrainingArgs
    from longscan.training.pipeline import run_training

    split_seeds = tuple(int(s) for s in seeds.split(","))
    chosen = tuple(d for d in datasets.split(",") if d.strip())
    if named_among and not named_synthetic:
        raise _fail("--named-among reads --named-synthetic copies: name a file with it")
    if token_level:
        if init_from is None:
            raise _fail("--token-level fine-tunes a converted checkpoint: give --init DIR")
        if named_synthetic:
            raise _fail("--named-synthetic trains the sentence scanner, not --token-level")
        _train_token_level(
            init_from,
            out,
            chosen,
            synthetic or [],
            split_seeds,
            max_per_source,
            {"lr": lr or 1e-4, "batch_size": batch_size, "epochs": epochs, "seed": seed},
            data_cache,
        )
        return
    unknown = [name for name in feature or () if name not in FEATURE_NAMES]
    if unknown:
        choices = ", ".join(FEATURE_NAMES)
        raise _fail(f"--feature {unknown[0]}: not a feature; choose from {choices}")
    layout = TRAINED_FEATURES if features is None else FEATURE_NAMES[: min(features, N_FEATURES)]
    names = tuple(dict.fromkeys([*layout, *(feature or ())]))
    try:
        encoder, encoder_adapter, context_tokens, table_context = _reading(
            init_from, encoder, encoder_adapter, context_tokens, table_context
        )
        args = TrainingArgs(
            model=ScannerConfig(
                d_model=d_model,
                n_layers=layers,
                n_features=len(names),
                feature_names=names,
                bidirectional=bidirectional,
                read_twice=read_twice,
                feature_skip=feature_skip,
                dropout=dropout,
            ),
            seeds=split_seeds,
            lengths_words=_lengths(lengths),
            max_per_source=max_per_source,
            epochs=epochs,
            lr=lr or 2e-3,
            seed=seed,
            threads=threads,
            datasets=chosen,
            synthetic=tuple(str(path) for path in synthetic or ()),
            named_synthetic=tuple(str(path) for path in named_synthetic or ()),
            named_among=named_among,
            init_from=None if init_from is None else str(init_from),
            listwise=listwise,
            sentence_labels=sentence_labels,
            encoder=encoder,
            encoder_adapter=None if encoder_adapter is None else str(encoder_adapter),
            context_tokens=context_tokens,
            table_context=table_context,
            evidence_first=evidence_first,
            row_context_negative=row_context_negative,
            instruction_copies=instruction_copies,
        )
        report = run_training(args, out, data_cache=data_cache)
    except (ValueError, FileNotFoundError, CheckpointError) as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps({k: report[k] for k in ("dev_metrics", "seconds_total")}))
    console.print(f"wrote {out}", highlight=False)


def _lengths(text: str) -> tuple[int, ...]:
    """``--lengths`` as positive word counts.

    Raises:
        ValueError: a value that is not a positive whole number.
    """
    values = text.split(",")
    if not all(value.strip().isdigit() and int(value) > 0 for value in values):
        raise ValueError(f"--lengths takes positive word counts, comma-separated, not {text!r}")
    return tuple(int(value) for value in values)


def _train_token_level(
    init: Path,
    out: Path,
    datasets: Sequence[str],
    synthetic: Sequence[Path],
    seeds: Sequence[int],
    max_per_source: int,
    settings: dict[str, Any],
    data_cache: Path | None,
) -> None:
    """`train --token-level`: tokenize the examples (or read them from `data_cache`), refuse
    a network too large for the machine, fine-tune, write the checkpoint."""
    from longscan.devices import torch_device
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.scanning.spscanner import read_spscanner_info
    from longscan.training import token_level as tl

    try:
        info = read_spscanner_info(init)
        tl.check_trainable(info.config, torch_device())
        examples = tl.cached_examples(init, datasets, synthetic, seeds, max_per_source, data_cache)
        report = tl.train_token_level(init, out, examples, tl.TokenTrainConfig(**settings))
    except (ValueError, FileNotFoundError, CheckpointError) as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps(report))
    console.print(f"wrote {out}", highlight=False)


def _reading(
    init_from: Path | None,
    encoder: str | None,
    encoder_adapter: Path | None,
    context_tokens: int | None,
    table_context: bool | None,
) -> tuple[str, Path | None, int, bool]:
    """The encoder, its adapter, window and table reading a training run uses: those given,
    else those of the checkpoint it fine-tunes (which refuses any other), else the
    defaults."""
    from longscan.encoders.contextual import DEFAULT_WINDOW_TOKENS, parse_name
    from longscan.encoders.minilm import DEFAULT_ENCODER, without_adapter

    base, adapter, window, tables = DEFAULT_ENCODER, None, DEFAULT_WINDOW_TOKENS, False
    if init_from is not None:
        from longscan.scanning.checkpoint import read_info

        info = read_info(init_from)[0]
        base, window, tables = parse_name(info.encoder)
        base, adapter = without_adapter(base), info.encoder_adapter
    chosen_tables = tables if table_context is None else table_context
    return encoder or base, encoder_adapter or adapter, context_tokens or window, chosen_tables


@app.command(name="train-encoder")
def train_encoder_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    pairs: Annotated[
        Path, typer.Option(help="Mined pairs (JSONL) written by `train-reranker --pairs-cache`.")
    ],
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=2)] = 64,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    init_from: Annotated[
        Path | None,
        typer.Option(help="Adapter folder to train on from (e.g. the shipped scanner's)."),
    ] = None,
    synthetic_from: Annotated[
        list[Path] | None,
        typer.Option(
            help="Keep the synthetic pairs of these `synth` example files' questions only "
            "(e.g. `synth-agree`'s output); repeatable."
        ),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the bi-encoder (a LoRA adapter over the packaged MiniLM) on the re-scorer's
    mined first-round pairs: each question against its gold sentence, one mined look-alike
    and the batch's other sentences (MultipleNegativesRankingLoss). Runs on a GPU when torch
    sees one (LONGSCAN_DEVICE chooses), in float32 as on the CPU."""
    _setup_logging(verbose)
    import torch

    from longscan.training.encoder import EncoderTrainConfig, run_encoder_training

    torch.set_num_threads(threads)
    try:
        report = run_encoder_training(
            out,
            pairs,
            EncoderTrainConfig(
                epochs, batch_size, lr, seed=seed, init_from=init_from and str(init_from)
            ),
            synthetic_from=synthetic_from or (),
        )
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise _fail(str(error)) from None
    summary = {k: report[k] for k in ("triplets", "steps", "initial_loss", "final_loss")}
    console.print_json(json.dumps({**summary, "seconds_total": report["seconds_total"]}))
    console.print(f"wrote {out}", highlight=False)


@app.command(name="train-reranker")
def train_reranker_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    squad: Annotated[int, typer.Option(min=0, help="SQuAD training questions.")] = 2000,
    hotpotqa: HotpotQAQuestions = None,
    musique: MuSiQueQuestions = None,
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=1)] = 32,
    lr: Annotated[float, typer.Option(min=0.0)] = 3e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    pairs_cache: Annotated[
        Path | None, typer.Option(help="JSONL of mined pairs: read if present, else written.")
    ] = None,
    synthetic: Annotated[
        list[Path] | None,
        typer.Option(help="`longscan synth` examples (JSONL) to mine pairs from too; repeatable."),
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(help="Adapter folder to train on from (e.g. the shipped re-scorer)."),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the cross-encoder re-scorer (a LoRA adapter and a head over the packaged
    MiniLM) on the shared datasets' train splits, and on synthetic examples when named, with
    hard negatives mined by BM25 and dense from each question's own document, and second-hop
    pairs. Runs on a GPU when torch sees one (LONGSCAN_DEVICE chooses), in float32 as on the
    CPU."""
    _setup_logging(verbose)
    import torch

    from longscan.training.reranker import (
        MiningConfig,
        TrainConfig,
        run_reranker_training,
        stalled,
    )

    torch.set_num_threads(threads)
    limits = {"squad": squad, "hotpotqa": hotpotqa, "musique": musique}
    sources = {name: limit for name, limit in limits.items() if limit != 0}
    try:
        report = run_reranker_training(
            out,
            sources,
            MiningConfig(),
            TrainConfig(epochs, batch_size, lr, seed=seed, init_from=init_from and str(init_from)),
            pairs_cache=pairs_cache,
            synthetic=synthetic or (),
        )
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise _fail(str(error)) from None
    summary = {k: report[k] for k in ("pairs", "steps", "initial_loss", "final_loss")}
    console.print_json(json.dumps({**summary, "seconds_total": report["seconds_total"]}))
    if stalled(report):
        console.print(
            f"[yellow]warning: the loss barely fell ({report['initial_loss']} → "
            f"{report['final_loss']}): this seed did not learn; train again with another "
            "--seed before using the adapter[/]"
        )
    console.print(f"wrote {out}", highlight=False)


@app.command(name="spscanner-convert")
def spscanner_convert(
    source: Annotated[
        Path,
        typer.Argument(
            help="A published SPScanner folder: config.json (mamba_ssm's MambaConfig), "
            "pytorch_model.bin or model.safetensors, tokenizer.json."
        ),
    ],
    out: Annotated[Path, typer.Argument(help="Checkpoint folder to write.")],
    sha256: Annotated[
        str | None, typer.Option(help="The weights file's published SHA-256, checked first.")
    ] = None,
    tokenizer: Annotated[
        Path | None, typer.Option(help="A tokenizer.json to use instead of the folder's.")
    ] = None,
) -> None:
    """Convert the paper's token-level scanner once (its pickle is read only with
    `torch.load(weights_only=True)`), for `-r spscanner:OUT`; later loads read safetensors."""
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.scanning.spscanner import convert_checkpoint, read_spscanner_info

    try:
        convert_checkpoint(source, out, expect_sha256=sha256, tokenizer=tokenizer)
        info = read_spscanner_info(out)
    except CheckpointError as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps({"model": info.config.to_dict(), "source": info.source}))
    console.print(f"wrote {out}; use it with -r spscanner:{out}", highlight=False)


@app.command()
def ensemble(
    members: Annotated[
        list[Path],
        typer.Argument(help="Checkpoints written by `longscan train` (one recipe, other seeds)."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the ensemble checkpoint.")],
) -> None:
    """Combine checkpoints trained with other seeds into one whose logit is their mean."""
    from longscan.scanning.checkpoint import CheckpointError
    from longscan.training.ensemble import combine_checkpoints

    try:
        combine_checkpoints(members, out, "longscan " + shlex.join(sys.argv[1:]))
    except (ValueError, CheckpointError) as error:
        raise _fail(str(error)) from None
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
    from longscan.retrievers.registry import name_forms

    for name in [*available(), *name_forms()]:
        typer.echo(name)


@app.command()
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
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="Start the local question writer (Qwen2.5-Coder 1.5B, one thread; extra "
            "\\[question-writer]) and use it.",
        ),
    ] = False,
    verbose: Verbose = False,
) -> None:
    """Turn long documents into labelled training examples with an LLM (chunk-, pair- or
    link-based, as in the SPScanner paper) for `longscan train --synthetic`. Every call is
    cached, so an interrupted run resumes without repeating calls."""
    _setup_logging(verbose)
    from longscan.answering.llm import LLMClient, LLMError
    from longscan.documents import DocumentError, read_paths
    from longscan.training import synthetic as syn

    chosen = strategy or ["link"]
    unknown = [s for s in chosen if s not in syn.STRATEGIES]
    if unknown:
        raise _fail(f"unknown strategy {unknown[0]!r}; choose chunk, table, pair or link")
    if min_tokens > max_tokens:
        raise _fail("--min-tokens must not exceed --max-tokens")
    settings = syn.SynthSettings(
        chunk_sentences, window_sentences, min_tokens, max_tokens, seed=seed
    )
    try:
        sources = [syn.SourceDocument(d, chunk_sentences) for d in read_paths(paths)]
        vectors = syn.chunk_vectors(sources) if "pair" in chosen else None
        plans = [syn.plan(sources, s, count, settings, vectors) for s in chosen]  # type: ignore[arg-type]
        # strategies take turns, so a run stopped early still holds each of them
        requests = [r for turn in zip_longest(*plans) for r in turn if r is not None]
    except (DocumentError, ValueError) as error:
        raise _fail(str(error)) from None
    estimate = syn.estimate(requests, settings)
    console.print(
        f"plan: {len(requests)} examples; at most {json.dumps(estimate)}", highlight=False
    )
    if dry_run:
        return
    fingerprints = None
    if decontaminate:
        from longscan.training.data import evaluation_fingerprints

        try:
            fingerprints = evaluation_fingerprints(corpus=True)
        except FileNotFoundError as error:
            raise _fail(f"{error}; pass --no-decontaminate to skip the check") from None
    with ExitStack() as stack:
        try:
            if local:
                llm, llm_model = _start_local_llm(stack, context_tokens=16_384, writer=True)
            overrides = {"json_mode": "json_object_schema"} if local else {}
            settings_llm = _llm_config(llm, llm_model, llm_config, **overrides)
        except (RuntimeError, ValueError) as error:
            raise _fail(str(error)) from None
        if settings_llm is None:
            from longscan.answering.llm import HOW_TO_ADD_AN_LLM

            raise _fail(f"synth needs an LLM. {HOW_TO_ADD_AN_LLM}")
        client = LLMClient(settings_llm)
        stats = syn.SynthStats()
        counts = out.with_name(out.name + ".stats.json")

        def save_counts(now: syn.SynthStats) -> None:
            counts.write_text(json.dumps(now.as_dict(), indent=1) + "\n", encoding="utf-8")

        try:
            examples = syn.generate(
                client, requests, settings, stats, fingerprints, after_each=save_counts
            )
            written = syn.write_examples(examples, out)
            save_counts(stats)
        except LLMError as error:
            raise _fail(f"{error} (rerun to resume: finished calls are cached)") from None
    console.print_json(
        json.dumps(
            {"examples": written, "strategies": stats.as_dict(), "usage": client.usage.as_dict()}
        )
    )
    console.print(f"wrote {out}", highlight=False)


bank_app = typer.Typer(
    help="A persistent memory bank of documents: add, remove, stats, search, check, repair.",
    no_args_is_help=True,
    context_settings=HELP_OPTIONS,
)
app.add_typer(bank_app, name="bank")
BANK_OPTION = typer.Option(
    "--bank",
    help="The bank's folder (default: bank/ in LONGSCAN_DATA_DIR or the user data folder).",
)


def _bank_folder(given: Path | None) -> Path:
    """The bank given, else ``bank/`` in the data folder (``settings.Folders``)."""
    from longscan.settings import Folders

    return given if given is not None else Folders().data_dir / "bank"


RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Run on this Ray cluster (e.g. ray://head:10001, or auto); default: Ray embedded "
        "on this machine with a worker per core.",
    ),
]


@bank_app.command("add")
def bank_add(
    paths: Annotated[
        list[Path],
        typer.Argument(exists=True, help="Files (text, Markdown, PDF, HTML, DOCX) or folders."),
    ],
    bank: Annotated[Path | None, BANK_OPTION] = None,
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
    from longscan.bank.ingest import ingest
    from longscan.bank.search import SCANNED_TOKENS
    from longscan.bank.store import BankError, from_files
    from longscan.documents import DocumentError, iter_paths
    from longscan.parallel import execution

    scanned = SCANNED_TOKENS if sentence_vectors else None
    try:
        store = MemoryBank(_bank_folder(bank), encoder=encoder)  # only add creates a bank
        with execution(ray_address):
            files = iter_paths(paths, hidden=hidden)
            report = ingest(store, from_files(files, prefix), source, domain,
                            scanned_tokens=scanned, total=len(files))  # fmt: skip
    except (DocumentError, ValueError, BankError) as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps({**report.as_dict(), "documents": len(store)}))


@bank_app.command("remove")
def bank_remove(
    keys: Annotated[list[str], typer.Argument(help="Document keys (as shown by search).")],
    bank: Annotated[Path | None, BANK_OPTION] = None,
) -> None:
    """Remove documents from the bank and its indexes; exit 1 when a key is not in the bank
    (the others are removed)."""
    from longscan.bank import MemoryBank
    from longscan.bank.store import BankError

    try:
        store = MemoryBank(_bank_folder(bank), create=False)
        wanted = list(dict.fromkeys(keys))
        unknown = [key for key in wanted if store.id_of(key) is None]
        removed = store.remove(wanted)
        summary = {"removed": removed, "unknown": unknown, "documents": len(store)}
        console.print_json(json.dumps(summary))
    except BankError as error:
        raise _fail(str(error)) from None
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise _fail(f"not in the bank: {names} (keys as `longscan bank search` shows them)", 1)


@bank_app.command("stats")
def bank_stats(bank: Annotated[Path | None, BANK_OPTION] = None) -> None:
    """Documents and tokens per domain, what is not indexed yet, and each index's entries."""
    from longscan.bank import MemoryBank
    from longscan.bank.store import BankError

    try:
        console.print_json(json.dumps(MemoryBank(_bank_folder(bank), create=False).stats()))
    except BankError as error:
        raise _fail(str(error)) from None


@bank_app.command("check")
def bank_check(bank: Annotated[Path | None, BANK_OPTION] = None) -> None:
    """Compare the documents with the BM25 and dense indexes, id by id; exit 1 unless every
    document is in both, once (`longscan bank repair` mends that)."""
    from longscan.bank import MemoryBank
    from longscan.bank.store import BankError

    folder = _bank_folder(bank)
    try:
        report = MemoryBank(folder, create=False).check()
    except BankError as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps(report.as_dict()))
    if not report.ok:
        found = "; ".join(report.problems)
        raise _fail(f"{found}: `longscan bank repair --bank {folder}` mends that", code=1)


@bank_app.command("repair")
def bank_repair(bank: Annotated[Path | None, BANK_OPTION] = None) -> None:
    """Make both indexes agree with the documents: rebuild an unreadable index, drop entries
    of deleted documents, index again what is missing. Prints what it found."""
    from longscan.bank import MemoryBank
    from longscan.bank.store import BankError

    try:
        store = MemoryBank(_bank_folder(bank), create=False)
        found = store.repair()
        after = store.check()
    except BankError as error:
        raise _fail(str(error)) from None
    console.print_json(json.dumps({"found": found.as_dict(), "ok": after.ok}))
    if not after.ok:
        raise typer.Exit(1)


@bank_app.command("search")
def bank_search(
    query: Annotated[str, typer.Option("--query", "-q", help="The question.")],
    bank: Annotated[Path | None, BANK_OPTION] = None,
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
    from longscan.bank.store import BankError
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
        raise _fail(str(error)) from None
    if as_json:
        payload = [
            {  # doc_id as in its evidence (EVIDENCE_JSON_SCHEMA): the bank id, as text
                "doc_id": str(h.doc_id),
                "key": h.key,
                "score": h.score,
                "evidence": [e.to_json() for e in h.evidence],
            }
            for h in hits
        ]
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
    bank: Annotated[Path | None, BANK_OPTION] = None,
    answerer: AnswererName = "auto",
    k: Annotated[int, typer.Option("-k", min=1, help="Documents to read evidence from.")] = 5,
    method: Annotated[str, typer.Option(help="First stage: bm25, dense or hybrid.")] = "hybrid",
    depth: Annotated[int, typer.Option(min=1, help="Candidates the scanner reads.")] = 50,
    budget_words: Annotated[
        int | None,
        typer.Option(min=1, help="Keep the best sentences while their words fit this budget."),
    ] = None,
    abstain: Annotated[
        bool, typer.Option(help="Say 'no evidence found' when the re-scorer judges none an answer.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for machines.")] = False,
    context: Annotated[
        int, typer.Option(min=0, help="Characters of context around each hit.")
    ] = CONTEXT_CHARS,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
) -> None:
    """Answer a question from the bank's best documents, citing bank ids and offsets: the
    same pipeline as `longscan ask`, over the bank's two-stage search."""
    from longscan.answering.answerers import get_answerer
    from longscan.bank import MemoryBank
    from longscan.bank.answer import ask as ask_bank
    from longscan.bank.store import BankError
    from longscan.pipeline import Pipeline
    from longscan.retrievers.base import validate_query
    from longscan.scanning.scanner import Scanner

    try:
        validate_query(query)
        store = MemoryBank(_bank_folder(bank), create=False)
        chosen = get_answerer(answerer, _llm_config(llm, llm_model, llm_config))
        pipeline = Pipeline(None, chosen, budget_words=budget_words, abstain=abstain)
        scanner = Scanner.from_pretrained(cache=store.sentence_cache())
        with errors.status(f"searching the bank ({len(store):,} documents)…"):
            result = ask_bank(store, query, pipeline, scanner, k=k, method=method, depth=depth)  # type: ignore[arg-type]
    except (ValueError, RuntimeError, BankError) as error:
        raise _fail(str(error)) from None
    answer = result.answer
    if as_json:
        payload = {"question": query, "retriever": "bank", **answer.to_json()}
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        _print_answer(query, "bank", answer, result.documents, context)
    if answer.error is not None:
        raise _fail(f"the evidence is above; the answerer gave no answer: {answer.error}", code=1)


@app.command(name="synth-pack")
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
    from longscan.training import synthetic as syn

    try:
        folder = sources or syn.train_docs()
        read = []
        for file in examples:
            text = file.read_text(encoding="utf-8")
            # a run still writing: whole lines only
            read += syn.parse_examples(text[: text.rfind("\n") + 1], str(file))
        ids = [example.id for example in read]
        if len(set(ids)) != len(ids):
            raise ValueError("the files share example ids: were two runs given the same seed?")
        read, repeated = syn.distinct_examples(read)
        packed = syn.pack_examples(read, folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in packed), "utf-8")
        syn.read_examples(out, folder)  # what was written reads back, labels and all
        if stats is not None:
            reports = [
                json.loads(file.with_name(file.name + ".stats.json").read_text("utf-8"))
                for file in examples
            ]
            merged = syn.merge_stats(reports, read, repeated)
            stats.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    except (FileNotFoundError, ValueError) as error:
        raise _fail(str(error)) from None
    console.print(
        f"packed {len(packed)} examples into {out}; left out {len(repeated)} repeated",
        highlight=False,
    )


@app.command(name="synth-agree")
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
    from longscan.training.agreement import filter_examples

    try:
        judge = shipped_judge() if reranker is None else get_reranker(str(reranker))
        kept, report = filter_examples(examples, judge, max_rank, sources)
    except (FileNotFoundError, ValueError) as error:
        raise _fail(str(error)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    out.with_name(out.name + ".report.json").write_text(report.to_json() + "\n", "utf-8")
    dropped = sum(sum(reasons.values()) for reasons in report.dropped.values())
    console.print(
        f"kept {len(kept)} examples in {out}; dropped {dropped}: {report.dropped}",
        highlight=False,
    )


@app.command(name="llm-serve")
def llm_serve(
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8080,
    context_tokens: Annotated[int, typer.Option(min=512, help="The model's window.")] = 8192,
    threads: Annotated[int, typer.Option(min=1)] = 2,
    writer: Annotated[
        bool,
        typer.Option(
            "--writer",
            help="Serve the question writer (Qwen2.5-Coder 1.5B, extra \\[question-writer]) "
            "instead of the answerer.",
        ),
    ] = False,
) -> None:
    """Serve a local model on 127.0.0.1 with llama.cpp's OpenAI-compatible server until
    Ctrl-C or SIGTERM, which stop the server too: the answerer, Gemma 3 270M (needs the
    \\[local-llm] extra), or with --writer the question writer (needs \\[question-writer])."""
    import time

    from longscan.answering.local import ANSWERER, QUESTION_WRITER, LocalServer

    model = QUESTION_WRITER if writer else ANSWERER
    try:
        with LocalServer(context_tokens, threads, port, model=model) as url:
            console.print(f"serving {model.name} at {url} (Ctrl-C stops)", highlight=False)
            console.print(f"longscan ask FILE -q QUESTION --llm {url}", highlight=False)
            while True:
                time.sleep(3600)
    except RuntimeError as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        pass


DEFAULT_SERVICE_DIR = Path.home() / ".local" / "share" / "longscan" / "service"


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs an API key.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8000,
    data_dir: Annotated[
        Path, typer.Option(help="Folder for uploads, the memory bank and sentence vectors.")
    ] = DEFAULT_SERVICE_DIR,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="LONGSCAN_API_KEY",
            show_default=False,
            help="Key every /api call must send as X-API-Key (or LONGSCAN_API_KEY).",
        ),
    ] = None,
    max_upload_mb: Annotated[float, typer.Option(min=0.001, help="Largest request body.")] = 32.0,
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds a question may wait and run before 504.")
    ] = 300.0,
    max_queued: Annotated[
        int, typer.Option(min=1, help="Questions waiting for the scanner before 503.")
    ] = 256,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Another name clients reach the service by (repeatable; '*' any). The "
            "bound host, and loopback names on loopback, are always accepted."
        ),
    ] = None,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    answerer: AnswererName = "auto",
    verbose: Verbose = False,
) -> None:
    """Serve the web page and the HTTP API (OpenAPI schema at /openapi.json) until Ctrl-C:
    upload documents, ask, see the evidence highlighted in the text."""
    _setup_logging(verbose)
    import dataclasses

    from longscan.service.settings import MIB, ServiceSettings

    try:  # refuse an unsafe bind before loading anything
        settings = ServiceSettings(
            data_dir,
            host,
            api_key,
            int(max_upload_mb * MIB),
            timeout,
            max_queued,
            allowed_hosts=tuple(allowed_host or ()),
        )
    except ValueError as error:
        raise _fail(str(error)) from None
    from longscan.service.app import create_app
    from longscan.service.server import make_server

    try:  # an unreadable LLM config, an answerer that is not installed
        settings = dataclasses.replace(
            settings, llm=_llm_config(llm, llm_model, llm_config), answerer=answerer
        )
        service = create_app(settings)
    except (RuntimeError, ValueError) as error:
        raise _fail(str(error)) from None
    console.print(f"longscan at http://{host}:{port}/ (Ctrl-C stops)", highlight=False)
    # timeouts for slow heads and bodies, and a connection bound that never refuses health
    make_server(service, settings, port, "info" if verbose else "warning").run()


QA_BENCHMARKS = (
    "loong",
    "leval-coursera",
    "leval-financial",
    "localize-hotpotqa",
    "localize-musique",
)


@app.command(name="bench")
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
    _setup_logging(verbose)
    from longscan.answering.llm import LLMClient, LLMError

    if benchmark == "ladder":  # evidence access only: no LLM
        from longscan.bench.ladder import DEFAULT_RUNGS, run_ladder

        try:
            rows = run_ladder(
                out, DEFAULT_RUNGS, per_domain=max_items or 40, ray_address=ray_address
            )
        except (ValueError, FileNotFoundError) as error:
            raise _fail(str(error)) from None
        console.print_json(json.dumps(rows))
        console.print(f"wrote {out / 'ladder.json'}", highlight=False)
        return
    if benchmark not in QA_BENCHMARKS:
        raise _fail(f"unknown benchmark {benchmark!r}; choose one of {', '.join(QA_BENCHMARKS)}")
    with ExitStack() as stack:
        try:
            if local:
                llm, llm_model = _start_local_llm(stack, context_tokens)
            settings = _llm_config(
                llm, llm_model, llm_config, context_tokens=context_tokens, max_tokens=max_tokens
            )
        except (RuntimeError, ValueError) as error:
            raise _fail(str(error)) from None
        if settings is None:
            from longscan.answering.llm import HOW_TO_ADD_AN_LLM

            raise _fail(f"this benchmark needs an LLM. {HOW_TO_ADD_AN_LLM}")
        for name in system or (["scanner"] if not benchmark.startswith("localize") else ["llm"]):
            client = LLMClient(settings)
            try:
                run = _run_qa(benchmark, name, client, budget_words, window_tokens, max_items, k)
            except (LLMError, ValueError, FileNotFoundError) as error:
                raise _fail(str(error)) from None
            console.print(run.summary["markdown"], highlight=False)
            console.print(f"usage: {json.dumps(run.usage)}", highlight=False)
            for path in run.write(out):
                console.print(f"wrote {path}", highlight=False)


def _run_qa(
    benchmark: str,
    name: str,
    client: LLMClient,
    budget_words: int,
    window_tokens: int | None,
    max_items: int | None,
    k: int,
) -> QARun:
    """One system on one answer-level benchmark."""
    from longscan.bench import qa
    from longscan.bench.runner import make_retriever

    if benchmark.startswith("localize-"):
        dataset = benchmark.split("-", 1)[1]
        return qa.run_localization(client, f"{dataset}-collection", k=k, max_items=max_items)
    retriever = None if name == qa.FULL_CONTEXT else make_retriever(name, [])
    if benchmark == "loong":
        return qa.run_loong(
            client, retriever, system=name, budget_words=budget_words, max_items=max_items
        )
    task = "coursera" if benchmark == "leval-coursera" else "financial_qa"
    return qa.run_longdoc_qa(
        client, task, retriever, system=name, budget_words=budget_words,
        window_tokens=window_tokens, max_items=max_items,
    )  # fmt: skip


@app.command(name="train-reader")
def train_reader_command(
    out: Annotated[Path, typer.Option(help="Adapter folder to write.")],
    squad: Annotated[
        int, typer.Option(min=0, help="SQuAD training questions (the split holds 5,339).")
    ] = 6000,
    hotpotqa: HotpotQAQuestions = None,
    musique: MuSiQueQuestions = None,
    max_windows: Annotated[
        int | None,
        typer.Option(min=1, help="Training windows, drawn at random (default: all)."),
    ] = None,
    epochs: Annotated[float, typer.Option(min=0.01)] = 1.0,
    batch_size: Annotated[int, typer.Option(min=1)] = 16,
    lr: Annotated[float, typer.Option(min=0.0)] = 4e-4,
    seed: Annotated[int, typer.Option()] = 0,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 2,
    verbose: Verbose = False,
) -> None:
    """Fine-tune the extractive reader (a LoRA adapter and a span head over the packaged
    MiniLM) on the shared datasets' train splits: each question read with its gold sentences
    among distractor sentences, or with answerless sentences only; then score it on the
    development sets, with the scores written into its model card."""
    _setup_logging(verbose)
    import torch

    from longscan.training.reader import ReaderTrainConfig, run_reader_training

    torch.set_num_threads(threads)
    limits = {"squad": squad, "hotpotqa": hotpotqa, "musique": musique}
    sources = {name: limit for name, limit in limits.items() if limit != 0}
    config = ReaderTrainConfig(epochs, batch_size, lr, seed=seed, max_windows=max_windows)
    try:
        report = run_reader_training(out, sources, config)
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise _fail(str(error)) from None
    summary = {k: report[k] for k in ("windows", "steps", "initial_loss", "final_loss")}
    console.print_json(json.dumps({**summary, "seconds_total": report["seconds_total"]}))
    console.print(f"wrote {out}", highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
