"""``pip install longscan-*.whl`` as a user runs it: a wheel built from this checkout with
its graphs, installed into a fresh virtual environment from PyPI alone (no local wheel
folder, extra index or pip configuration), brings neither torch nor CUDA and answers the
README's question with the scanner. ``benchmarks/install_size.py`` builds and installs."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from installed import benchmark

ROOT = Path(__file__).resolve().parents[2]
NOVEL = ROOT / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTION = "What time is it always at the Hatter's tea party?"
INSTALL = benchmark("install_size")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return INSTALL.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def python(wheel: Path) -> Path:
    """The fresh environment's interpreter, with the wheel installed."""
    return INSTALL.fresh_install(wheel, wheel.parent.parent / "venv")


def test_the_wheel_installs_without_torch_or_cuda(python: Path) -> None:
    names = INSTALL.installed_names(python)
    assert {"longscan", "onnxruntime", "bm25s"} <= names
    assert not [name for name in names if name.startswith(INSTALL.GPU_STACK)]


def test_the_installed_command_answers_the_readme_question(python: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(python.parent / "longscan"), "ask", "--json", "-q", QUESTION, str(NOVEL)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reply = json.loads(done.stdout)
    assert not reply["abstained"]
    assert reply["answer"]["text"].startswith("six")  # "It's always six o'clock now"
    text = NOVEL.read_text(encoding="utf-8")
    assert reply["evidence"]
    for item in reply["evidence"]:
        assert text[item["start"] : item["end"]] == item["text"]


def test_each_extra_resolves_alone_from_pypi(wheel: Path, python: Path) -> None:
    """pip finds a consistent set of PyPI packages for the wheel with each extra alone (a
    dry run: metadata only, nothing downloaded but what the resolver reads)."""
    extras = INSTALL.extras(wheel)
    assert {"readers", "serve", "train", "answerer"} <= set(extras)
    with ThreadPoolExecutor(4) as pool:  # the resolver mostly waits on the index
        planned = pool.map(lambda extra: INSTALL.plan(python, wheel, extra), extras)
        plans = dict(zip(extras, planned, strict=True))
    for extra, names in plans.items():
        assert names, extra
        if extra in ("export", "train", "presses", "local-llm", "test", "dev"):
            assert "torch" in names, extra  # PyPI's build: scripts/setup.sh picks the CPU one
        else:
            assert not [name for name in names if name.startswith(INSTALL.GPU_STACK)], extra
