"""What the commands share: the consoles, text made safe for a terminal, errors printed
whole, the options several commands take, logging, a progress bar and the local model.

Heavy libraries are imported inside the functions, so ``longscan --help`` stays instant.
"""

from __future__ import annotations

import logging
import sys
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

if TYPE_CHECKING:
    from longscan.answering.llm import LLMConfig

console = Console(width=None if Console().is_terminal else 200)  # logs keep whole tables
errors = Console(stderr=True)
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

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


def fail(message: str, code: int = 2) -> typer.Exit:
    """The exit to raise after printing ``message`` as an error (2: the input is refused)."""
    _print_error(message)
    return typer.Exit(code)


# click's base of usage errors, whether typer vendors click (0.2x) or imports it (0.12)
_CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class WholeErrors(TyperGroup):
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
        except ImportError as error:  # an optional library this install lacks
            from longscan.extras import install_hint

            hint = install_hint(error)
            if hint is None:
                raise
            _print_error(hint)
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


LLMUrl = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (or LONGSCAN_LLM_URL).",
    ),
]
LLMModel = Annotated[
    str | None, typer.Option("--llm-model", help="Model name (or LONGSCAN_LLM_MODEL).")
]
LLMConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--llm-config",
        help="TOML file with an \\[llm] table (default ~/.config/longscan/llm.toml).",
    ),
]
AnswererName = Annotated[
    str | None,
    typer.Option(
        "--answerer",
        "-a",
        show_default=False,
        help="Who answers from the evidence: auto (a configured --llm server, else the "
        "local instruct model when installed, else the extractive reader), llm, local, "
        "extractive, or none (evidence only). Default: LONGSCAN_ANSWERER, else auto.",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Log informational messages on stderr, not only warnings."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
CONTEXT_CHARS = 160
ContextChars = Annotated[int, typer.Option(min=0, help="Characters of context around each hit.")]


def setup_logging(verbose: bool) -> None:
    """Warnings on stderr, and with ``--verbose`` informational messages too."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s: %(message)s",
        stream=sys.stderr,
    )


def answerer_name(option: str | None) -> str:
    """The ``--answerer`` given, else the environment's default (``auto`` unset)."""
    from longscan.settings import CommandDefaults

    return option or CommandDefaults().answerer


def llm_settings(
    url: str | None, model: str | None, config_file: Path | None, **overrides: Any
) -> LLMConfig | None:
    """The LLM the options name, else the environment's or the config file's; None: none."""
    from longscan.answering.llm import resolve_config

    return resolve_config(url, model, config_file, **overrides)


def start_local_llm(
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


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback that draws a bar on stderr from its first call (nothing
    shows for work already done, and nothing when stderr is not a terminal)."""
    from longscan.progress import Bar

    with ExitStack() as stack:
        bar: list[Any] = []

        def advance(done: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(Bar(description, total=total)))
            bar[0].update(completed=done)

        yield advance
