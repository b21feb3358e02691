"""The ``longscan`` command line: ask a long document, evaluate retrievers on benchmarks.

Each command lives in the module of its group and calls the library; heavy libraries are
imported inside the commands, so ``longscan --help`` is instant. The commands are listed
here, in the order ``--help`` shows them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from longscan.cli import ask, bank, evaluate, serve, synth, train
from longscan.cli.common import HELP_OPTIONS, WholeErrors, fail

app = typer.Typer(
    cls=WholeErrors,
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


# the commands that read long documents (the listing commands and training do not)
STREAMING_COMMANDS = frozenset({"ask", "eval", "bench", "bank", "serve"})


@app.callback()
def _options(
    context: typer.Context,
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
    if context.invoked_subcommand in STREAMING_COMMANDS:
        from longscan.devices import bound_allocator

        bound_allocator()  # streaming a long document keeps peak memory flat
    if device is not None:
        from longscan.devices import DEVICE_VARIABLE, torch_device
        from longscan.settings import override

        override(device=device)
        torch_device.cache_clear()
        try:
            torch_device()
        except ValueError as error:
            raise fail(str(error).replace(f"{DEVICE_VARIABLE}=", "--device ")) from None


app.command(name="ask")(ask.ask)
app.command(name="eval")(evaluate.evaluate_command)
app.command(name="train")(train.train_command)
app.command(name="train-encoder")(train.train_encoder_command)
app.command(name="train-reranker")(train.train_reranker_command)
app.command(name="spscanner-convert")(train.spscanner_convert)
app.command(name="ensemble")(train.ensemble)
app.command(name="benchmarks")(evaluate.benchmarks)
app.command(name="retrievers")(evaluate.retrievers)
app.command(name="synth")(synth.synth)
app.command(name="synth-pack")(synth.synth_pack)
app.command(name="synth-agree")(synth.synth_agree)
app.command(name="synth-reword")(synth.synth_reword)
app.command(name="llm-serve")(serve.llm_serve)
app.command(name="serve")(serve.serve)
app.command(name="bench")(evaluate.bench_command)
app.command(name="train-reader")(train.train_reader_command)
app.add_typer(bank.bank_app, name="bank")

__all__ = ["app"]
