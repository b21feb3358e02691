"""BENCHMARKS.md is what ``benchmarks/report.py`` builds from its template and the result
files: no number in it is typed by hand where a result file holds it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "report.py"


def _report_module():  # noqa: ANN202 - a script loaded as a module
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("report", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_benchmarks_md_is_what_the_report_script_builds() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_a_marker_becomes_its_results_provenance_and_chosen_tables() -> None:
    report = _report_module()
    names = sorted(p.stem for p in (SCRIPT.parent / "results").glob("*.json"))
    assert names, "no result files"
    found = report.result_files.load(names[0])
    rendered = report.render(f"before\n<!-- result {names[0]} 0 -->\nafter\n")
    assert rendered.startswith(report.GENERATED)
    assert found["command"] in rendered and found["commit"][:7] in rendered
    first = found["tables"][0]
    assert f"#### {first['title']}" in rendered
    assert "| " + " | ".join(first["columns"]) + " |" in rendered
    for other in found["tables"][1:]:
        assert f"#### {other['title']}" not in rendered
    assert rendered.rstrip().endswith("after")
