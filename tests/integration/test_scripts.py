"""The README's two commands and CI's entry point are valid shell (a quoting slip once broke
the demo script's default question), and the README's quickstart prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIT_LINE = re.compile(
    r"^(?P<doc>\S+) (?P<start>\d+) (?P<end>\d+) (?P<score>-?[\d.]+) (?P<text>.+)$"
)


@pytest.mark.parametrize(
    "script", ["scripts/demo.sh", "scripts/test.sh", "scripts/setup.sh", ".ci/run"]
)
def test_script_parses(script: str) -> None:
    result = subprocess.run(["bash", "-n", str(ROOT / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def quickstart() -> tuple[str, str]:
    """The README's quickstart: its Python block and the output block after it."""
    section = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the quickstart has no ```python block"
    shown = re.search(r"```\n(.*?)```", section[code.end() :], re.S)
    assert shown is not None, "the quickstart shows no output block after its code"
    return code.group(1), shown.group(1)


def hits(output: str) -> list[dict[str, str]]:
    lines = [line for line in output.splitlines() if line.strip()]
    parsed = [HIT_LINE.match(line) for line in lines]
    assert all(parsed), f"not a hit line in {lines}"
    return [match.groupdict() for match in parsed if match]


def test_readme_quickstart_prints_what_the_readme_shows(monkeypatch) -> None:
    code, shown = quickstart()
    monkeypatch.chdir(ROOT)  # the example reads the novel by a path relative to the clone
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md quickstart", "exec"), {"__name__": "readme"})
    expected, actual = hits(shown), hits(printed.getvalue())
    assert [(h["doc"], h["start"], h["end"], h["text"]) for h in actual] == [
        (h["doc"], h["start"], h["end"], h["text"]) for h in expected
    ], f"the README's quickstart output is stale; a real run printed:\n{printed.getvalue()}"
    for mine, theirs in zip(actual, expected, strict=True):  # printed to 2 decimals
        assert float(mine["score"]) == pytest.approx(float(theirs["score"]), abs=0.011)
