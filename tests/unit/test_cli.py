from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from longscan.cli import app
from longscan.documents import Document

runner = CliRunner()


@pytest.mark.parametrize(
    "command", [[], ["ask"], ["eval"], ["train"], ["ensemble"], ["benchmarks"]]
)
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_short_help_and_version() -> None:
    from longscan import __version__

    assert runner.invoke(app, ["--version"]).output.strip() == f"longscan {__version__}"
    for command in ([], ["ask"], ["bank"], ["bank", "add"]):
        result = runner.invoke(app, [*command, "-h"])
        assert result.exit_code == 0 and "Usage" in result.output, command


def test_device_option_is_checked_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    from longscan.devices import DEVICE_VARIABLE, torch_device
    from longscan.settings import clear_overrides, worker_environment

    monkeypatch.delenv(DEVICE_VARIABLE, raising=False)
    try:
        wrong = runner.invoke(app, ["--device", "not-a-device", "retrievers"])
        assert wrong.exit_code == 2 and "--device 'not-a-device'" in wrong.output
        asked = ["--device", "cpu", "ask", "-", "-q", "key?", "-r", "dense-sentence", "--json"]
        right = runner.invoke(app, asked, input="The key is under the stone.")
        assert right.exit_code == 0, right.output
        assert torch_device() == "cpu"
        # the choice reaches Ray workers without being written to this process's environment
        assert DEVICE_VARIABLE not in os.environ
        assert worker_environment() == {DEVICE_VARIABLE: "cpu"}
    finally:
        clear_overrides()
        torch_device.cache_clear()


def test_ask_reads_standard_input_and_min_score_drops_unmatched_units() -> None:
    story = "The vault opens at noon.\n\nThe key is under the third stone.\n\nBirds sang."
    asked = ["ask", "-", "-q", "Where is the key?", "-r", "bm25-sentence", "--json"]
    every = json.loads(runner.invoke(app, asked, input=story).stdout)["evidence"]
    assert {e["doc_id"] for e in every} == {"<stdin>"} and len(every) == 3
    assert min(e["score"] for e in every) == 0  # BM25 gives units without a query word 0
    kept = json.loads(runner.invoke(app, [*asked, "--min-score", "0"], input=story).stdout)
    assert [e["text"] for e in kept["evidence"]] == ["The key is under the third stone."]
    assert story[kept["evidence"][0]["start"] : kept["evidence"][0]["end"]] == (
        "The key is under the third stone."
    )
    empty = runner.invoke(app, asked, input="  \n")
    assert empty.exit_code == 2 and "standard input holds no text" in empty.output


def test_hidden_files_and_git_are_skipped_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("The key is under the third stone.")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "COMMIT_EDITMSG.txt").write_text("The key moved to the shed.")
    (tmp_path / ".draft.md").write_text("The key is in the drawer.")
    asked = ["ask", str(tmp_path), "-q", "Where is the key?", "-r", "bm25-sentence", "--json"]
    shown = json.loads(runner.invoke(app, asked).stdout)["evidence"]
    assert {e["doc_id"] for e in shown} == {"notes.txt"}
    everything = json.loads(runner.invoke(app, [*asked, "--hidden"]).stdout)["evidence"]
    assert {e["doc_id"] for e in everything} == {
        "notes.txt", ".draft.md", ".git/COMMIT_EDITMSG.txt"
    }  # fmt: skip


def test_ask_json_gives_exact_offsets(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    text = "The vault opens at noon.\n\nThe key is under the third stone."
    path.write_text(text)
    result = runner.invoke(
        app, ["ask", str(path), "-q", "Where is the key?", "-r", "bm25-sentence", "--json"]
    )
    assert result.exit_code == 0, result.output
    evidence = json.loads(result.output)["evidence"]
    assert evidence[0]["text"] == "The key is under the third stone."
    assert text[evidence[0]["start"] : evidence[0]["end"]] == evidence[0]["text"]


def test_ask_highlights_in_context(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("The vault opens at noon.\n\nThe key is under the third stone.")
    result = runner.invoke(app, ["ask", str(path), "-q", "key stone", "-r", "bm25-sentence"])
    assert result.exit_code == 0
    assert "notes.txt" in result.output and "The key is under the third stone." in result.output


@pytest.mark.parametrize(
    ("setup", "query", "message"),
    [
        (lambda d: d / "missing.txt", "q", "no such file"),
        (lambda d: (d / "x.txt").write_text("text") and d / "x.txt", "   ", "query is empty"),
        (lambda d: (d / "b.bin").write_bytes(b"\x00\x01") and d, "q", "no readable text"),
    ],
)
def test_bad_input_is_a_message_and_exit_2(tmp_path: Path, setup, query, message) -> None:
    result = runner.invoke(app, ["ask", str(setup(tmp_path)), "-q", query])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_non_utf8_file_is_read_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes("Le café est fermé le lundi.".encode("latin-1"))
    result = runner.invoke(app, ["ask", str(path), "-q", "café", "-r", "bm25-sentence"])
    assert result.exit_code == 0 and "latin.txt" in result.output


def test_eval_unknown_benchmark_is_a_message() -> None:
    result = runner.invoke(app, ["eval", "-b", "nope", "-r", "bm25-sentence"])
    assert result.exit_code == 2 and "nope" in result.output


@pytest.mark.parametrize(("words", "stem"), [(2000, "squad-long-2k"), (800, "squad-long-800w")])
def test_eval_files_name_the_document_length(tmp_path: Path, words: int, stem: str) -> None:
    arguments = ["-b", "squad-long", "-r", "bm25-sentence", "--max-items", "1"]
    result = runner.invoke(
        app, ["eval", *arguments, "--target-words", str(words), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / f"{stem}.json").read_text())["settings"]["target_words"] == words


def test_eval_asks_every_query_after_the_instruction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longscan.bench import runner as bench_runner

    asked: list[str] = []
    evaluate = bench_runner.evaluate

    def recording(retriever, items, **kwargs):  # type: ignore[no-untyped-def]
        asked.extend(item.query for item in items)
        return evaluate(retriever, items, **kwargs)

    monkeypatch.setattr(bench_runner, "evaluate", recording)
    instruction = "Use the attached pages to reply."
    arguments = ["eval", "-b", "squad-long", "-r", "bm25-sentence", "--max-items", "2"]
    result = runner.invoke(app, [*arguments, "--target-words", "800", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    plain, asked[:] = list(asked), []
    with_instruction = [*arguments, "--target-words", "800", "--instruction", instruction]
    result = runner.invoke(app, [*with_instruction, "--out", str(tmp_path / "i")])
    assert result.exit_code == 0, result.output
    assert asked == [f"{instruction}\n\n{query}" for query in plain] and len(plain) == 2
    settings = json.loads((tmp_path / "i" / "squad-long-800w.json").read_text())["settings"]
    assert settings["instruction"] == instruction
    result = runner.invoke(app, [*arguments, "--instruction", "  "])
    assert result.exit_code == 2 and "instruction is empty" in result.output


# ------------------------------------------------------------------ terminal output

HOSTILE = (
    "The vault opens at noon.\n\n"
    "The key is under the \x1b]0;pwned\x07third stone.\x1b[2J Then \x9b31m it rained."
)


def test_ask_escapes_control_characters_in_the_terminal(tmp_path: Path) -> None:
    """A document's escape sequences are shown, not obeyed (no retitled window, no cleared
    screen); markup-like text in the question is printed as it is."""
    path = tmp_path / "notes\x1b[1m.txt"
    path.write_text(HOSTILE)
    result = runner.invoke(
        app, ["ask", str(path), "-q", "[bold]key stone[/]", "-r", "bm25-sentence"]
    )
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in result.output
    assert "\\x1b]0;pwned\\x07third stone.\\x1b[2J" in result.output
    assert "\\x9b31m" in result.output and "notes\\x1b[1m.txt" in result.output
    assert "[bold]key stone[/]" in result.output


def test_ask_json_keeps_control_characters_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(HOSTILE)
    result = runner.invoke(
        app, ["ask", str(path), "-q", "key stone", "-r", "bm25-sentence", "--json", "-k", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout  # JSON writes them as \u001b
    (evidence,) = json.loads(result.stdout)["evidence"]
    assert "under the \x1b]0;pwned\x07third stone.\x1b[2J Then \x9b31m" in evidence["text"]
    assert HOSTILE[evidence["start"] : evidence["end"]] == evidence["text"]


REORDERING = (
    "The vault opens at noon.\n\nThe key is under the \u202ethird stone\u202c by the\u2066 gate."
)


def test_ask_escapes_bidirectional_controls_in_the_terminal_only(tmp_path: Path) -> None:
    """U+202E would show the rest of its line reversed: the terminal gets it as text, the
    JSON gets it as it is, and the offsets index the document exactly."""
    path = tmp_path / "notes.txt"
    path.write_text(REORDERING, encoding="utf-8")
    asked = ["ask", str(path), "-q", "key stone", "-r", "bm25-sentence", "-k", "1"]
    shown = runner.invoke(app, asked)
    assert shown.exit_code == 0, shown.output
    assert not {"\u202e", "\u202c", "\u2066"} & set(shown.output)
    assert "under the \\u202ethird stone\\u202c by the\\u2066 gate." in shown.output
    result = runner.invoke(app, [*asked, "--json"])
    (evidence,) = json.loads(result.stdout)["evidence"]
    assert "\u202ethird stone\u202c by the\u2066 gate." in evidence["text"]
    assert REORDERING[evidence["start"] : evidence["end"]] == evidence["text"]


def test_bank_search_escapes_control_characters_in_the_terminal(tmp_path: Path) -> None:
    """The bank's plain output shows keys and evidence as text, like ``ask``."""
    from longscan.bank import MemoryBank

    bank = MemoryBank(tmp_path / "bank")
    bank.add([Document("[red]notes\x1b]0;x\x07.txt", HOSTILE)])
    bank.sync(progress=False)
    del bank
    result = runner.invoke(
        app,
        ["bank", "search", "-q", "key stone", "--bank", str(tmp_path / "bank")],
    )
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in result.output
    assert "[red]notes\\x1b]0;x\\x07.txt" in result.output
    assert "\\x1b]0;pwned\\x07third stone." in result.output


# ------------------------------------------------------------------ errors print whole


@pytest.mark.parametrize(
    "command",
    [
        ["bank", "add", "{path}"],  # typer's own check of the argument (it drew a panel)
        ["ask", "{path}", "-q", "key"],  # the reader's error
    ],
)
def test_errors_print_whole_on_one_line_at_80_columns(tmp_path: Path, command) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 6) / "and-a-long-file-name.txt"
    args = [part.replace("{path}", str(deep)) for part in command]
    result = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 2
    (line,) = [line for line in result.output.splitlines() if str(deep) in line]
    assert line.startswith("error: ") and ("not exist" in line or "no such file" in line)
    assert "Traceback" not in result.output


def test_llm_serve_help_names_the_extra() -> None:
    result = runner.invoke(app, ["llm-serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "needs the [local-llm] extra" in result.output
    assert "needs [question-writer]" in result.output


# ------------------------------------------------------------------ llm-serve and signals

# `longscan llm-serve` (the real command and LocalServer) with a stand-in for llama.cpp's
# server: a small HTTP server that answers /v1/models, so the test needs no compiled extra.
STAND_IN = """
import os, signal, sys
# as from a terminal: a background job of a non-interactive shell (as CI may be) starts
# with SIGINT ignored, and one under nohup with SIGHUP ignored; llm-serve keeps an ignored
# signal ignored, as a user who chose nohup expects
signal.signal(signal.SIGINT, signal.default_int_handler)
for number in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(number, signal.SIG_DFL)
from longscan.answering import local
from longscan.cli import app

folder, port = sys.argv[1], sys.argv[2]
child = (
    "import http.server, os, sys, functools; "
    "open(sys.argv[1], 'w').write(str(os.getpid())); "
    "handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2]); "
    "http.server.HTTPServer(('127.0.0.1', int(sys.argv[3])), handler).serve_forever()"
)
local.LocalServer.command = lambda self: [
    sys.executable, "-c", child, os.path.join(folder, "pid"), folder, str(self.port)
]
app(["llm-serve", "--port", port])
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has stopped already


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
def test_llm_serve_stops_its_server_when_stopped_by_a_signal(tmp_path: Path, number) -> None:
    from longscan.answering.local import free_port

    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text('{"data": []}')
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(tmp_path), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = None
    try:
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline() if ready else ""
        assert "serving" in line, line
        server = int((tmp_path / "pid").read_text())
        assert _alive(server)
        process.send_signal(number)
        code = process.wait(timeout=60)
        assert code in (0, 128 + number, -number)
        deadline = time.monotonic() + 20
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server), f"the server outlived `llm-serve` (exit {code})"
        with socket.socket() as probe:  # and the port is free again
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
    finally:
        process.kill()
        process.wait()
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)


def test_a_first_scan_shows_sentences_and_time_left_and_json_stays_clean(
    novel_path: Path, monkeypatch
) -> None:
    """On a terminal, the first reading of the novel draws a bar (sentences of the total,
    time left) on stderr; stdout holds only the JSON. A second question draws none."""
    import io

    from rich.console import Console

    from longscan import progress
    from longscan.cli import ask
    from longscan.readers.files import read_paths

    screen = io.StringIO()
    drawing = Console(file=screen, force_terminal=True, width=80)
    monkeypatch.setattr(ask, "errors", drawing)
    monkeypatch.setattr(progress, "stderr", drawing)  # where the bars are drawn
    args = ["ask", str(novel_path), "-q", "Who fell down the rabbit hole?", "-k", "2", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert len(json.loads(first.stdout)["evidence"]) == 2
    total = len(read_paths([novel_path])[0].sentences)
    drawn = screen.getvalue()
    assert "encoding sentences" in drawn and f"/{total}" in drawn and "left" in drawn
    screen.truncate(0)
    screen.seek(0)
    again = runner.invoke(app, [*args[:3], "What did the Cat say?", *args[4:]])
    assert again.exit_code == 0 and json.loads(again.stdout)["evidence"]
    assert "encoding sentences" not in screen.getvalue()


def test_train_lengths_default_to_the_recipe_and_refuse_what_is_no_length(tmp_path) -> None:
    import inspect

    from longscan.cli.train import train_command
    from longscan.training.options import LENGTHS_WORDS, parse_lengths

    default = inspect.signature(train_command).parameters["lengths"].default
    assert parse_lengths(default) == LENGTHS_WORDS and parse_lengths("150, 1500") == (150, 1500)
    for wrong in ("150,abc", "0", "", "150,,1500"):
        result = CliRunner().invoke(app, ["train", "--out", str(tmp_path), "--lengths", wrong])
        assert result.exit_code != 0 and "--lengths takes positive word counts" in result.output
    assert not any(tmp_path.iterdir())  # refused before anything was built or written


def test_train_refuses_a_feature_it_does_not_compute(tmp_path) -> None:
    result = CliRunner().invoke(app, ["train", "--out", str(tmp_path), "--feature", "nope"])
    assert result.exit_code != 0 and "--feature nope: not a feature" in result.output
    assert "window_dense_rank" in result.output  # the choices are listed
    assert not any(tmp_path.iterdir())


def test_ask_shows_a_table_row_with_the_lines_that_say_what_it_is(filing_path: Path) -> None:
    """A row of figures alone does not say what they are: the terminal view gives the row's
    table title, column header and row group under it; prose gets no such line."""
    query = ["-q", "Services 6,698 6,296", "-r", "bm25-sentence", "-k", "1"]
    shown = runner.invoke(app, ["ask", str(filing_path), *query], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    words = " ".join(shown.output.split())
    assert "table: CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" in words
    assert "| Cost of sales:" in words and "Services 6,698 6,296" in words
    prose = runner.invoke(app, ["ask", str(filing_path), "-q", "legal proceedings",
                                "-r", "bm25-sentence", "-k", "1"], terminal_width=80)  # fmt: skip
    assert prose.exit_code == 0 and "table: " not in prose.output


def test_verbose_has_help_wherever_it_is_taken() -> None:
    """Read from the commands themselves, not from a help page rich wraps at its width."""
    import click
    import typer.main

    def commands(command: click.Command, name: str) -> list[tuple[str, click.Command]]:
        found = [(name, command)]
        for child_name, child in getattr(command, "commands", {}).items():
            found += commands(child, f"{name} {child_name}".strip())
        return found

    taking = {
        name: param.help
        for name, command in commands(typer.main.get_command(app), "")
        for param in command.params
        if "--verbose" in getattr(param, "opts", ())
    }
    assert {"ask", "serve", "eval", "train"} <= set(taking)
    assert all(taking.values()), taking


def test_serve_runs_the_server_guarded_against_slow_clients(monkeypatch, tmp_path: Path) -> None:
    """`longscan serve` runs ``service.server.make_server`` (head and body timeouts, a
    connection bound that leaves health answering), not a plain uvicorn run whose
    concurrency limit half-sent requests fill; its answerer is the one asked for."""
    from longscan.service import server

    served = []

    class Recorded:
        def __init__(self, service: object, settings: Any, port: int, level: str) -> None:
            served.append((port, settings.answerer))

        def run(self) -> None:
            pass

    monkeypatch.setattr(server, "make_server", Recorded)
    command = ["serve", "--port", "8765", "--data-dir", str(tmp_path), "--answerer", "none"]
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    assert served == [(8765, "none")]
    unknown = runner.invoke(app, [*command[:-1], "oracle"])
    assert unknown.exit_code == 2 and "unknown answerer 'oracle'" in unknown.output


def test_the_commands_that_read_long_documents_bound_the_allocator() -> None:
    """Each streaming command the list names exists (a renamed command would silently lose
    its flat peak memory)."""
    from longscan.cli import STREAMING_COMMANDS

    commands = {command.name for command in app.registered_commands}
    commands |= {group.name for group in app.registered_groups}
    assert commands >= STREAMING_COMMANDS, STREAMING_COMMANDS - commands


def test_a_paragraph_is_printed_with_its_found_sentence_and_answer_marked_apart() -> None:
    """In a paragraph read around the sentence found, that sentence is bold, the rest of the
    paragraph plain, an extracted answer inside it green; the text is the document's."""
    from longscan.cli.ask import _highlighted

    text = "Intro. Mara kept the key under the pot. Tom never found it. The end."
    start, end = text.index("Mara"), text.index(" The end.")
    found = (start, text.index(" Tom"))
    answer = (text.index("under"), text.index(". Tom"))
    shown = _highlighted(text, start, end, 7, answer, [found])
    assert shown.plain == "Intro. Mara kept the key under the pot. Tom never found it. The en…"
    styles = {shown.plain[span.start : span.end]: str(span.style) for span in shown.spans}
    assert styles["Mara kept the key "] == "bold yellow"
    assert styles["under the pot"] == "bold green underline"
    assert styles[" Tom never found it."] == "yellow"
    assert _highlighted(text, start, end, 0).spans[1].style == "bold yellow"  # nothing found
