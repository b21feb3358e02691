"""The layers import downward only (pyproject's import contracts), and the core types load
alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_core_types_import_only_segmentation() -> None:
    code = (
        "import sys, longscan.documents, longscan.items\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('longscan'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = done.stdout.split()
    assert loaded == ["longscan", "longscan.documents", "longscan.items", "longscan.segment"]
