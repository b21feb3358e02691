"""The README's two commands and CI's entry point are valid shell (a quoting slip once broke
the demo script's default question)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "script", ["scripts/demo.sh", "scripts/test.sh", "scripts/setup.sh", ".ci/run"]
)
def test_script_parses(script: str) -> None:
    result = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
