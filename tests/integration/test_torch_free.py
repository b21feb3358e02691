"""With the graphs the package can carry prebuilt (``scripts/build_exports.py``), a question
is answered from an empty cache in a process that finds only the core's libraries (torch,
transformers, sentence-transformers, onnx and every extra's are hidden): the query path needs
ONNX Runtime and the packaged graphs only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from installed import LONGSCAN, build_exports_script, hidden, run_hiding
from longscan.answering.answerers import get_answerer
from longscan.pipeline import Pipeline
from longscan.readers.files import read_paths

ROOT = Path(__file__).resolve().parents[2]
NOVEL = ROOT / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTION = "What time is it always at the Hatter's tea party?"
CHILD = (
    """
from pathlib import Path
import longscan.files
FOLDER = Path(sys.argv.pop(1))
longscan.files.exports_folder = lambda: FOLDER
"""
    + LONGSCAN
)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scanner's, the re-scorer's and the reader's graphs, built as a wheel's are."""
    script = build_exports_script()
    out = tmp_path_factory.mktemp("exports")
    script.build(out, ("scanner",))
    assert not script.check(out)
    return out


def test_a_question_is_answered_without_torch(exports: Path, tmp_path: Path) -> None:
    args = ["ask", "--json", "--answerer", "extractive", "-q", QUESTION, str(NOVEL)]
    done = run_hiding(
        hidden(),
        CHILD,
        [str(exports), *args],
        timeout=600,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reply = json.loads(done.stdout)
    reference = Pipeline("scanner", get_answerer("extractive")).answer(
        QUESTION, read_paths([NOVEL])
    )
    assert not reply["abstained"] and reply["answer"]["text"] == reference.text
    assert reply["answer"]["text"].startswith("six")  # "It's always six o'clock now"
    spans = [(item["start"], item["end"]) for item in reply["evidence"]]
    assert spans == [(item.start, item.end) for item in reference.ranked]
    text = NOVEL.read_text(encoding="utf-8")
    for item in reply["evidence"]:
        assert text[item["start"] : item["end"]] == item["text"]


def test_a_question_without_the_graphs_or_torch_says_what_to_install(tmp_path: Path) -> None:
    args = ["ask", "--answerer", "extractive", "-q", QUESTION, str(NOVEL)]
    done = run_hiding(
        hidden(),
        CHILD,
        [str(tmp_path / "none"), *args],
        timeout=600,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode != 0
    assert "torch" in done.stderr and "Traceback" not in done.stderr
