"""Result files: what a benchmark measured, beside the commit, command and settings that
measured it, so a report can be rebuilt from them and every number traced to its run."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def provenance() -> dict[str, Any]:
    """The commit (and whether tracked files differed from it), the command and the machine."""
    return {
        "commit": _git("rev-parse", "HEAD") or "unknown",
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "command": shlex.join(["python", *map(_relative, sys.argv)]),
        "measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu_name()}, {os.cpu_count()} cores",
    }


def _relative(argument: str) -> str:
    """A path inside the working folder as the relative path a reader can run anywhere."""
    path = Path(argument)
    if path.is_absolute() and path.is_relative_to(Path.cwd()):
        return str(path.relative_to(Path.cwd()))
    return argument


def cpu_name() -> str:
    """The processor's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def save(name: str, settings: dict[str, Any], tables: list[dict[str, Any]]) -> Path:
    """Write ``results/NAME.json``: provenance, settings and the tables (each a title,
    column names and rows), replacing the previous result of that name."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    record = {"name": name, **provenance(), "settings": settings, "tables": tables}
    text = json.dumps(record, indent=1, ensure_ascii=False, default=str)  # paths as text
    path.write_text(text + "\n", encoding="utf-8")
    return path


def table(title: str, columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """A table as result files keep it: a title, column names and rows of cells (None for
    a value not measured)."""
    return {"title": title, "columns": columns, "rows": rows}


def markdown(found: dict[str, Any], heading: str = "###") -> str:
    """A table as Markdown, the first column left-aligned and the others right-aligned, a
    missing value as a dash; with ``heading``, its title above it at that level."""
    columns = found["columns"]
    lines = [f"{heading} {found['title']}", ""] if heading else []
    lines += ["| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1)]
    for row in found["rows"]:
        cells = ["—" if value is None else str(value) for value in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load(name: str) -> dict[str, Any]:
    """``results/NAME.json`` as ``save`` wrote it."""
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
