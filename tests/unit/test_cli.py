from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    "command", [[], ["ask"], ["eval"], ["train"], ["ensemble"], ["benchmarks"]]
)
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output


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
