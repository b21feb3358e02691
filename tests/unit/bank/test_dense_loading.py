"""usearch and onnxruntime in one process: the commands that load both (dense and hybrid
search, and a repair that encodes documents) run to the end, in fresh interpreters, since a
crash at import would take the test process with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from longscan.bank import MemoryBank
from longscan.bank.indexes import embed_openings
from longscan.documents import Document

CLI = "import sys; from longscan.cli import app; sys.argv[0] = 'longscan'; app()"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_usearch_from_the_bank_then_onnxruntime_exits_cleanly() -> None:
    code = "from longscan.bank.dense import usearch_index; usearch_index(); import onnxruntime"
    result = _run("-c", code)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def pending_bank(tmp_path: Path) -> Path:
    """A bank whose documents are stored and not indexed (what a crashed repair leaves), and
    the encoder's ONNX export already made, as after a first use: the commands then load
    onnxruntime straight away, without torch (which would load the system's libstdc++
    first and hide the crash)."""
    embed_openings(["An opening to encode."])
    MemoryBank(tmp_path).add(
        [
            Document("harbour.txt", "The harbour master logs every ship that docks at night."),
            Document("orchard.txt", "Apple trees in the orchard bloom in early spring."),
        ]
    )
    return tmp_path


def test_repair_then_dense_and_hybrid_search_exit_cleanly(pending_bank: Path) -> None:
    repaired = _run("-c", CLI, "bank", "repair", "--bank", str(pending_bank))
    assert repaired.returncode == 0, repaired.stderr
    assert MemoryBank(pending_bank).check().ok
    for method in ("dense", "hybrid"):
        searched = _run(
            "-c", CLI, "bank", "search", "-q", "ships docking at night", "--first-stage",
            "--method", method, "--bank", str(pending_bank), "--json",
        )  # fmt: skip
        assert searched.returncode == 0, searched.stderr
        assert json.loads(searched.stdout)[0]["key"] == "harbour.txt"
