"""One parser of retriever names, ``scanner:DIR`` included, for `ask`, `eval` and the API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.bench.runner import make_retriever
from longscan.cli import app
from longscan.retrievers import get_retriever
from longscan.retrievers.registry import parse_name
from longscan.retrievers.scanner import ScannerRetriever
from longscan.scanning.checkpoint import CheckpointError, default_checkpoint_dir

STORY = (
    "Mara kept the spare key under the blue flowerpot by the back door.\n\n"
    "In June the family drove to Lisbon for the wedding of a cousin."
)


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A copy of the shipped checkpoint in a folder of its own."""
    return Path(shutil.copytree(default_checkpoint_dir(), tmp_path / "my-scanner"))


@pytest.fixture
def corrupt(checkpoint: Path) -> Path:
    weights = next(checkpoint.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"\x00" * 8)
    return checkpoint


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("bm25-sentence", ("bm25-sentence", None)),
        ("scanner", ("scanner", None)),
        ("scanner:runs/my-scanner", ("scanner", Path("runs/my-scanner"))),
        ("scanner-sliding:/abs/dir", ("scanner-sliding", Path("/abs/dir"))),
    ],
)
def test_names_parse(name: str, parsed: tuple) -> None:
    assert parse_name(name) == parsed


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope", "unknown retriever 'nope'.*scanner:DIR"),
        ("nope:dir", "unknown retriever"),
        ("bm25-sentence:dir", "takes no checkpoint or model"),
        ("dense-sentence:", "name the model"),
        ("scanner:", "name the checkpoint folder"),
    ],
)
def test_bad_names_are_refused_with_a_reason(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_retriever(name)


def test_get_retriever_loads_a_checkpoint_folder(checkpoint: Path) -> None:
    retriever = get_retriever(f"scanner:{checkpoint}")
    assert isinstance(retriever, ScannerRetriever)
    assert retriever.scanner.mode == "stream"
    assert get_retriever(f"scanner-sliding:{checkpoint}").scanner.mode == "sliding"


def test_the_checkpoint_folder_is_the_one_read(corrupt: Path) -> None:
    for build in (get_retriever, lambda name: make_retriever(name, [])):  # ask and eval
        with pytest.raises(CheckpointError, match=str(corrupt)):
            build(f"scanner:{corrupt}")


def test_ask_accepts_a_checkpoint_folder(tmp_path: Path, checkpoint: Path) -> None:
    path = tmp_path / "story.txt"
    path.write_text(STORY)
    result = CliRunner().invoke(
        app,
        ["ask", str(path), "-q", "Where is the spare key?", "-r", f"scanner:{checkpoint}"]
        + ["--json", "-k", "1"],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["retriever"] == f"scanner:{checkpoint}"
    assert payload["evidence"][0]["text"].startswith("Mara kept the spare key")


def test_ask_names_a_bad_checkpoint_folder(tmp_path: Path) -> None:
    path = tmp_path / "story.txt"
    path.write_text(STORY)
    result = CliRunner().invoke(
        app, ["ask", str(path), "-q", "key?", "-r", f"scanner:{tmp_path / 'absent'}"]
    )
    assert result.exit_code == 2 and "absent" in result.output
    assert "unknown retriever" not in result.output and "Traceback" not in result.output
