"""`ask` says "no evidence found" when the scanner's best sentence is below the threshold
its checkpoint was calibrated with, and does not ask an LLM then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.cli import app
from longscan.retrievers import get_retriever
from longscan.scanning.checkpoint import CONFIG_FILE, CheckpointError, default_checkpoint_dir

QUESTION = "What did the Hatter say about the time at the tea party?"


def checkpoint_with(tmp_path: Path, threshold: object) -> Path:
    folder = tmp_path / "scanner"
    shutil.copytree(default_checkpoint_dir(), folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["abstain_below"] = threshold
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    return folder


def asked(novel_path: Path, retriever: str, *options: str) -> dict:
    result = CliRunner().invoke(
        app,
        ["ask", str(novel_path), "-q", QUESTION, "-r", retriever, "--json", "-k", "3", *options],
        env={"LONGSCAN_LLM_URL": "http://127.0.0.1:9/v1"},  # an LLM that would fail if asked
    )  # fmt: skip
    return {"exit_code": result.exit_code, **json.loads(result.stdout)}


def test_below_the_threshold_ask_abstains_and_asks_no_llm(novel_path: Path, tmp_path: Path):
    strict = asked(novel_path, f"scanner:{checkpoint_with(tmp_path / 'a', 1e9)}")
    assert strict["abstained"] is True and strict["exit_code"] == 0
    assert strict["evidence"] and strict["llm_error"] is None and strict["answer"] is None
    lenient = asked(novel_path, f"scanner:{checkpoint_with(tmp_path / 'b', -1e9)}")
    assert lenient["abstained"] is False
    assert lenient["llm_error"]  # it did ask the (unreachable) LLM
    assert [e["start"] for e in lenient["evidence"]] == [e["start"] for e in strict["evidence"]]
    forced = asked(novel_path, f"scanner:{checkpoint_with(tmp_path / 'c', 1e9)}", "--no-abstain")
    assert forced["abstained"] is False and forced["llm_error"]


def test_only_a_calibrated_plain_scan_abstains(tmp_path: Path) -> None:
    folder = checkpoint_with(tmp_path, 0.5)
    assert get_retriever(f"scanner:{folder}").abstain_below == 0.5
    assert get_retriever(f"scanner-sliding:{folder}").abstain_below is None
    assert get_retriever("bm25-sentence").abstains([]) is False
    with pytest.raises(CheckpointError, match="abstain_below must be a number"):
        get_retriever(f"scanner:{checkpoint_with(tmp_path / 'bad', 'high')}")
