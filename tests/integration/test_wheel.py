"""``pip install longscan-*.whl`` as a user runs it: a wheel built from this checkout with
its graphs, installed into a fresh virtual environment from PyPI alone (no local wheel
folder, extra index or pip configuration), brings neither torch nor CUDA, takes at most
500 MB and answers the README's question with the scanner; each extra resolves alone.
``benchmarks/install_size.py`` builds and installs."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from installed import benchmark

ROOT = Path(__file__).resolve().parents[2]
NOVEL = ROOT / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTION = "What time is it always at the Hatter's tea party?"
INSTALL = benchmark("install_size")
LARGEST_MB = 500  # what the core install may take on disk, its venv's pip included


def test_the_wheel_installs_from_pypi_and_answers(tmp_path: Path) -> None:
    """One test, so one worker builds the wheel (a fixture would be built by each worker
    that runs one of its tests): the install, the README's question, each extra's plan."""
    wheel = INSTALL.build_wheel(tmp_path)
    python = INSTALL.fresh_install(wheel, tmp_path / "venv")

    names = INSTALL.installed_names(python)
    assert {"longscan", "onnxruntime", "bm25s"} <= names
    assert not [name for name in names if name.startswith(INSTALL.GPU_STACK)]
    size = INSTALL.folder_size(tmp_path / "venv") / INSTALL.MB
    assert size <= LARGEST_MB, f"the core install takes {size:.0f} MB"

    done = subprocess.run(
        [str(python.parent / "longscan"), "ask", "--json", "-q", QUESTION, str(NOVEL)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reply = json.loads(done.stdout)
    assert not reply["abstained"]
    assert reply["answer"]["text"].startswith("six")  # "It's always six o'clock now"
    text = NOVEL.read_text(encoding="utf-8")
    assert reply["evidence"]
    for item in reply["evidence"]:
        assert text[item["start"] : item["end"]] == item["text"]

    # each extra alone: pip finds a consistent set of PyPI packages (a dry run reads
    # metadata only); `test` and `dev`, which gather the others, are what scripts/setup.sh
    # installs for this very suite
    extras = [extra for extra in INSTALL.extras(wheel) if extra not in ("test", "dev")]
    assert {"readers", "serve", "train", "answerer"} <= set(extras)
    with ThreadPoolExecutor(4) as pool:  # the resolver mostly waits on the index
        planned = pool.map(lambda extra: INSTALL.plan(python, wheel, extra), extras)
        plans = dict(zip(extras, planned, strict=True))
    for extra, planned_names in plans.items():
        assert planned_names, extra
        gpu = [name for name in planned_names if name.startswith(INSTALL.GPU_STACK)]
        if extra in ("export", "train", "presses", "local-llm"):
            assert "torch" in planned_names, extra  # PyPI's: scripts/setup.sh picks the CPU one
        else:
            assert not gpu, extra
