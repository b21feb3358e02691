"""The README's two commands and CI's entry point are valid shell (a quoting slip once broke
the demo script's default question), and the README's quickstart prints what it says."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
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
    # The int8 encoder's 7-bit weights make its integer products exact on every x86-64
    # CPU, with or without VNNI: only float rounding may differ, never the printed scores
    # by more than their last digit.
    for mine, theirs in zip(actual, expected, strict=True):
        assert float(mine["score"]) == pytest.approx(float(theirs["score"]), abs=0.011)


# ------------------------------------------------------------------ which torch setup.sh installs

FAKE_PYTHON = """#!/usr/bin/env bash
# A stand-in for the venv's python: logs every pip call, and answers the two questions
# setup.sh asks pip (is a CPU wheel available without an index? what is installed?).
echo "$*" >> "$FAKE_LOG"
case "$*" in
  *--dry-run*) [ "${FAKE_LOCAL_CPU_WHEEL:-0}" = 1 ] ;;
  *"pip list"*) [ "${FAKE_NVIDIA:-0}" = 1 ] && echo "nvidia-cublas-cu12 12.9.1.4"; true ;;
  *) true ;;
esac
"""


def run_setup(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``source scripts/setup.sh`` with a stand-in venv; the torch installs it made."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    (venv / "bin" / "activate").write_text(f'export PATH="{venv / "bin"}:$PATH"\n')
    return run_setup_again(tmp_path, **env)


def run_setup_again(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``run_setup`` in the stand-in venv it made."""
    venv = tmp_path / "venv"
    log = tmp_path / "pip.log"
    variables = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LONGSCAN_VENV": str(venv)}
    result = subprocess.run(
        ["bash", "-c", f'source "{ROOT / "scripts/setup.sh"}" ""'],
        env={**variables, "FAKE_LOG": str(log), **env},
        capture_output=True,
        text=True,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return result, [call for call in calls if "torch" in call and "--dry-run" not in call]


def test_setup_takes_a_local_cpu_wheel_when_pip_finds_one(tmp_path: Path) -> None:
    result, torch_calls = run_setup(tmp_path, FAKE_LOCAL_CPU_WHEEL="1")
    assert result.returncode == 0, result.stderr
    assert torch_calls == ["-m pip install --quiet torch==2.13.0+cpu"]


def test_setup_takes_pytorchs_cpu_index_when_no_cpu_wheel_is_local(tmp_path: Path) -> None:
    result, torch_calls = run_setup(tmp_path)
    assert result.returncode == 0, result.stderr
    assert torch_calls == [
        "-m pip install --quiet --index-url https://download.pytorch.org/whl/cpu "
        "--extra-index-url https://pypi.org/simple torch==2.13.0+cpu"
    ]


def test_setup_installs_the_cuda_build_when_asked_and_accepts_its_packages(tmp_path: Path) -> None:
    result, torch_calls = run_setup(tmp_path, LONGSCAN_TORCH="cuda", FAKE_NVIDIA="1")
    assert result.returncode == 0, result.stderr
    assert torch_calls == ["-m pip install --quiet torch==2.13.0"]


def test_setup_takes_any_wheel_index_by_url(tmp_path: Path) -> None:
    index = "https://download.pytorch.org/whl/cu126"
    result, torch_calls = run_setup(tmp_path, LONGSCAN_TORCH=index)
    assert result.returncode == 0, result.stderr
    assert torch_calls == [
        f"-m pip install --quiet --index-url {index} "
        "--extra-index-url https://pypi.org/simple torch==2.13.0"
    ]


def test_setup_stops_when_cuda_packages_come_with_the_cpu_build(tmp_path: Path) -> None:
    result, _ = run_setup(tmp_path, FAKE_NVIDIA="1", FAKE_LOCAL_CPU_WHEEL="1")
    assert result.returncode == 1 and "LONGSCAN_TORCH=cuda" in result.stderr


def test_setup_refuses_an_unknown_choice(tmp_path: Path) -> None:
    result, torch_calls = run_setup(tmp_path, LONGSCAN_TORCH="rocm please")
    assert result.returncode != 0 and "use cpu, cuda or the URL" in result.stderr
    assert torch_calls == []


def test_setup_reinstalls_when_the_choice_changes(tmp_path: Path) -> None:
    run_setup(tmp_path, FAKE_LOCAL_CPU_WHEEL="1")
    (tmp_path / "pip.log").unlink()
    result, _ = run_setup_again(tmp_path, FAKE_LOCAL_CPU_WHEEL="1")
    assert result.returncode == 0 and not (tmp_path / "pip.log").exists()  # installed already
    result, torch_calls = run_setup_again(tmp_path, LONGSCAN_TORCH="cuda")
    assert result.returncode == 0 and torch_calls == ["-m pip install --quiet torch==2.13.0"]


def test_the_local_wheel_probe_is_a_valid_pip_command() -> None:
    """The probe's exit status means found (0) or not (1), never a usage error (2)."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--no-deps"]
        + ["--no-index", "torch==2.13.0+cpu"],
        capture_output=True,
        text=True,
    )
    assert result.returncode in (0, 1), result.stderr


# ------------------------------------------------------------------ ranges in, pins in setup


def test_core_dependencies_are_ranges_and_setup_pins_inside_them() -> None:
    """longscan installs beside other tools: its core dependencies are ranges, and each exact
    version setup.sh installs (scripts/constraints.txt) lies inside every range declared for
    it, in the core or an extra."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = [Requirement(line) for line in project["dependencies"]]
    extras = [Requirement(line) for group in project["optional-dependencies"].values()
              for line in group]  # fmt: skip
    lines = (ROOT / "scripts/constraints.txt").read_text().splitlines()
    pins = [Requirement(line) for line in lines if line and not line.startswith("#")]
    assert not [r.name for r in core if any(s.operator == "==" for s in r.specifier)]
    assert {"torch", "ray", "onnxruntime"} <= {pin.name for pin in pins}
    for pin in pins:
        (version,) = [s.version for s in pin.specifier]
        for declared in core + extras:
            if declared.name == pin.name:
                assert declared.specifier.contains(version), (pin, declared)


# ------------------------------------------------------------------ the main command's answer


def demo_question() -> str:
    """The question the README's main command asks by default (scripts/demo.sh)."""
    script = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    match = re.search(r'^DEFAULT_QUESTION="(.+)"$', script, re.M)
    assert match is not None, "demo.sh sets no DEFAULT_QUESTION"
    return match.group(1)


def test_the_main_command_prints_an_answer_with_citations(monkeypatch, novel_path) -> None:
    """What `bash scripts/demo.sh` runs, with nothing configured: the default answerer
    (`auto`) answers, and each citation names a place in the novel whose text is there."""
    from typer.testing import CliRunner

    from longscan.cli import app

    monkeypatch.delenv("LONGSCAN_ANSWERER", raising=False)  # the default, as a user has it
    for name in ("LONGSCAN_LLM_URL", "LONGSCAN_LLM_MODEL", "LONGSCAN_LLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(novel_path.parent / "no-config"))
    command = ["ask", str(novel_path), "-q", demo_question()]
    result = CliRunner().invoke(app, command, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    answer = re.search(r"^Answer \((?P<model>[^)]+)\): (?P<text>.+)$", result.stdout, re.M)
    assert answer is not None, result.stdout
    assert re.search(r"\bsix\b|\b6\b", answer.group("text"), re.I), answer.group("text")
    flat = " ".join(result.stdout.split())  # a narrow terminal wraps long lines
    assert "cites: " in flat and "cites: nothing" not in flat, result.stdout
    text = novel_path.read_text(encoding="utf-8")
    as_json = CliRunner().invoke(app, [*command, "--json"], env={"COLUMNS": "80"})
    reply = json.loads(as_json.stdout)["answer"]
    assert reply["citations"], reply
    for citation in reply["citations"]:
        assert text[citation["start"] : citation["end"]] == citation["text"]
        assert f"chars {citation['start']}–{citation['end']}" in flat
