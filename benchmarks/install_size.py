"""What `pip install longscan` costs a user: the wheel, the environment, and their largest parts.

    python benchmarks/install_size.py [--work DIR] [--save NAME]

Builds a wheel from this checkout's tracked files with the graphs the query path runs
(``scripts/build_exports.py``, which needs torch here), installs it into a fresh virtual
environment from PyPI alone (``pip --isolated``: no local wheel folder, extra index or pip
configuration), and reports the wheel's size, the environment's size on disk, the
distributions that take the most, the seconds the install took and whether torch or CUDA
came in. ``tests/integration/test_wheel.py`` builds and installs the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GPU_STACK = ("torch", "nvidia", "triton")
MB = 1e6


def pip(python: Path, *args: str) -> str:
    """pip ignoring this machine's configuration and environment (``--isolated``): PyPI
    alone, as on a user's machine. Without ``PYTHONPATH`` too: a checkout's ``src`` on it
    would count as longscan installed already, and the wheel would not be."""
    options = ["--isolated", "--disable-pip-version-check", "--no-input"]
    if os.environ.get("PIP_CERT"):  # a TLS proxy's certificate, where there is one
        options += ["--cert", os.environ["PIP_CERT"]]
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    done = subprocess.run(
        [str(python), "-m", "pip", *args, *options],
        capture_output=True,
        text=True,
        timeout=1800,
        env=environment,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def build_wheel(work: Path) -> Path:
    """A wheel of the tracked files with the query path's graphs, built in ``work``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    source = work / "source"
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (REPO / name).is_file():  # a file deleted but not yet committed is skipped
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    exports = source / "src" / "longscan" / "exports"
    subprocess.run(
        [sys.executable, REPO / "scripts" / "build_exports.py", "--out", exports],
        check=True,
        capture_output=True,
    )
    pip(
        Path(sys.executable), "wheel", "--quiet", "--no-deps", "-w", str(work / "dist"), str(source)
    )
    (wheel,) = (work / "dist").glob("longscan-*.whl")
    return wheel


def fresh_install(wheel: Path, environment: Path) -> Path:
    """``environment``, a new virtual environment with ``wheel`` installed from PyPI."""
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    pip(python, "install", "--quiet", str(wheel))
    return python


def extras(wheel: Path) -> list[str]:
    """The extras ``wheel`` declares."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [item for item in archive.namelist() if item.endswith(".dist-info/METADATA")]
        text = archive.read(name).decode("utf-8")
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Provides-Extra:")]  # fmt: skip


def plan(python: Path, wheel: Path, extra: str) -> set[str]:
    """The distributions pip would install for ``wheel[extra]`` from PyPI (a dry run)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        pip(python, "install", "--dry-run", "--quiet", "--report", str(report), f"{wheel}[{extra}]")
        planned = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {item["metadata"]["name"].lower() for item in planned}


def installed_names(python: Path) -> set[str]:
    listed = json.loads(pip(python, "list", "--format", "json"))
    return {item["name"].lower() for item in listed}


def folder_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def largest(python: Path, count: int) -> list[tuple[str, float]]:
    """The ``count`` distributions with the most bytes on disk (their RECORD's files)."""
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: sum((f.size or 0) for f in d.files or [])"
        " for d in m.distributions()}))"
    )
    sizes = json.loads(subprocess.check_output([str(python), "-c", code], text=True))
    ranked = sorted(sizes.items(), key=lambda pair: -pair[1])[:count]
    return [(name, size / MB) for name, size in ranked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, help="Folder to build in (default: a temporary one).")
    parser.add_argument("--top", type=int, default=12, help="Distributions listed by size.")
    parser.add_argument("--save", help="Write the tables to benchmarks/results/NAME.json.")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="longscan-install-"))
    started = time.perf_counter()
    wheel = build_wheel(work)
    built = time.perf_counter() - started
    started = time.perf_counter()
    python = fresh_install(wheel, work / "venv")
    seconds = time.perf_counter() - started
    names = installed_names(python)
    gpu = sorted(name for name in names if name.startswith(GPU_STACK))
    environment = folder_size(work / "venv") / MB
    exports = folder_size(work / "source" / "src" / "longscan" / "exports") / MB
    summary = [
        ["wheel (MB)", round(wheel.stat().st_size / MB, 1)],
        ["of which the packaged graphs, uncompressed (MB)", round(exports, 1)],
        ["environment on disk (MB)", round(environment, 1)],
        ["distributions installed", len(names)],
        ["torch, nvidia or triton packages", ", ".join(gpu) or "none"],
        ["wheel build with its graphs (s)", round(built, 1)],
        ["pip install from PyPI (s)", round(seconds, 1)],
    ]
    parts = [[name, round(size, 1)] for name, size in largest(python, options.top)]
    for row in summary:
        print(f"{row[0]:50} {row[1]}")
    for name, size in parts:
        print(f"  {name:40} {size:8.1f} MB")
    if options.save:
        import result_files

        result_files.save(
            options.save,
            {"top": options.top},
            [
                result_files.table("pip install longscan", ["measure", "value"], summary),
                result_files.table("largest distributions", ["distribution", "MB"], parts),
            ],
        )
    if options.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
