"""`bank add` into a log or a pipe: plain progress lines that count the files against their
total, where a terminal would show a bar."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from longscan import progress
from longscan.bank import MemoryBank
from longscan.cli import app
from longscan.documents import Document


def test_bank_add_writes_progress_lines_with_a_total_where_stderr_is_no_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.txt").write_text(f"Report {i}: the harbour logged {i} ships.")
    MemoryBank(tmp_path / "bank").add([Document("left.txt", "Stored, never indexed.")])
    written = io.StringIO()
    monkeypatch.setattr(progress, "stderr", Console(file=written, force_terminal=False))
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)  # a line at every step
    command = ["bank", "add", str(folder), "--bank", str(tmp_path / "bank")]
    result = CliRunner().invoke(app, [*command, "--no-sentence-vectors"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents"] == 4
    lines = written.getvalue().splitlines()
    assert lines and all(line.startswith("ingesting documents: ") for line in lines)
    assert lines[-1].startswith("ingesting documents: 4/4 (100%), ")  # 3 files, 1 row left
    assert "\x1b" not in written.getvalue()
