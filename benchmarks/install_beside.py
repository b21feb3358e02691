"""Installing longscan into an environment that already holds another torch keeps that torch.

Makes a fresh virtual environment, installs the given torch wheel there without its
dependencies (only pip's metadata matters here: it is never imported), then runs
`pip install -e .` for this checkout as a user would, with no constraints file, and reports
torch's version before and after and any CUDA packages pulled in.

pip download torch==2.6.0 --no-deps -d /tmp/torchdl
python benchmarks/install_beside.py /tmp/torchdl/torch-2.6.0-*.whl
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def pip(venv: Path, *args: str) -> str:
    run = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return run.stdout


def torch_version(venv: Path) -> str:
    shown = pip(venv, "show", "torch")
    return next(line.split(": ", 1)[1] for line in shown.splitlines() if line.startswith("Version"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("torch_wheel", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="longscan-install-"))
    try:
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip(venv, "install", "--quiet", "--no-deps", str(args.torch_wheel))
        before = torch_version(venv)
        started = time.perf_counter()
        pip(venv, "install", "--quiet", "-e", str(REPO))
        seconds = time.perf_counter() - started
        after = torch_version(venv)
        listed = pip(venv, "list", "--format=freeze")
        cuda = {line.split("==")[0].lower() for line in listed.splitlines()
                if line.lower().startswith("nvidia")}  # fmt: skip
        # torch was installed without its dependencies: pip adds them back with the others
        required = pip(venv, "show", "torch").split("Requires:", 1)[1].splitlines()[0]
        by_torch = {name.strip().lower() for name in required.split(",")}
        print(f"torch before: {before}; after `pip install -e .`: {after} "
              f"({'kept' if before == after else 'REPLACED'}); CUDA packages installed: "
              f"{len(cuda)}, of them required by torch {before} itself: "
              f"{len(cuda & by_torch)}, by anything else: {len(cuda - by_torch)}; install "
              f"took {seconds:.0f} s")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
