"""The command line imports only what a command needs: ``--help`` and a BM25 question that
skips the abstention judgement load no model library, and a second question (the scanner's,
or BM25's judged by the re-scorer) runs on ONNX Runtime alone, without
torch, sentence-transformers, transformers, scikit-learn, Ray or FastAPI (their imports once
made a second question take 11 s of the 18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "sklearn",
    "ray",
    "fastapi",
    "onnxruntime",
    "matplotlib",
)
PROBE = """
import json, sys
from longscan.cli import app
sys.argv = ["longscan", *json.loads(sys.argv[1])]
try:
    app()
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(m for m in HEAVY if m in sys.modules)}),
      file=sys.stderr)
"""


def imported(args: list[str], cache: Path) -> list[str]:
    """The heavy modules ``longscan ARGS`` imported, in a fresh interpreter."""
    environment = {**os.environ, "LONGSCAN_CACHE_DIR": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}", json.dumps(args)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), result.stderr
    return report["modules"]


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"], ["bank", "--help"]])
def test_help_imports_no_model_library(args: list[str], tmp_path: Path) -> None:
    assert imported(args, tmp_path) == []


def test_a_bm25_question_imports_no_model_library(novel_path: Path, tmp_path: Path) -> None:
    args = ["ask", "-r", "bm25-sentence", "-q", "Who fell down the hole?", str(novel_path)]
    assert imported([*args, "--no-abstain"], tmp_path) == []
    imported(args, tmp_path)  # the first judgement exports the re-scorer to ONNX once
    assert imported(args, tmp_path) == ["onnxruntime"]


def test_a_second_scanner_question_imports_only_the_scan_path(
    novel_path: Path, tmp_path: Path
) -> None:
    """The first question exports the encoder and the scan network to ONNX once (through
    torch and transformers); later ones run them through ONNX Runtime."""
    imported(["ask", "-q", "Who fell down the hole?", str(novel_path)], tmp_path)
    modules = imported(["ask", "-q", "What did the cat say?", str(novel_path)], tmp_path)
    assert "onnxruntime" in modules
    assert not {"transformers", "sentence_transformers", "sklearn", "ray", "fastapi"} & set(modules)
