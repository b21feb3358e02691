"""What an install of longscan with some extras would have, read from this environment's
metadata, and processes that see only that: the other libraries are hidden from the import
system as if they were not installed."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
# present in every environment pip makes; never hidden
ALWAYS = {"pip", "setuptools", "pkg_resources", "_distutils_hack", "longscan"}
# run first in a child: the modules and distributions named in argv[1] (JSON) cannot be
# found in site-packages, neither imported nor seen in the metadata (a library that checks
# for another by its metadata would import it); copies vendored elsewhere (Ray's) still can.
HIDING = """
import importlib.machinery, json, re, site, sys
HIDDEN, GONE = map(set, json.loads(sys.argv.pop(1)))
SITE = set(site.getsitepackages())
finder = importlib.machinery.PathFinder
found, listed = finder.find_spec, finder.find_distributions
def find_spec(cls, name, path=None, target=None):  # as if they were not installed
    if path is None and name.split(".")[0] in HIDDEN:
        path = [entry for entry in sys.path if entry not in SITE]
    return found(name, path, target)
def find_distributions(cls, context=None):
    for distribution in listed(context) if context else listed():
        if re.sub(r"[-_.]+", "-", distribution.metadata["Name"] or "").lower() not in GONE:
            yield distribution
finder.find_spec = classmethod(find_spec)
finder.find_distributions = classmethod(find_distributions)
"""

# the command line, with the arguments after HIDING's
LONGSCAN = "from longscan.cli import app\nsys.argv = ['longscan', *sys.argv[1:]]\napp()\n"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def distributions(extras: frozenset[str]) -> frozenset[str]:
    """The installed distributions that ``longscan[extras]`` requires, transitively."""
    found: set[str] = set()
    todo, done = [("longscan", extras)], set()
    while todo:
        name, wanted_extras = todo.pop()
        if (name, wanted_extras) in done:
            continue
        done.add((name, wanted_extras))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        found.add(_normal(name))
        for requirement in map(Requirement, requires):
            if requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in wanted_extras or {""}
            ):
                todo.append((_normal(requirement.name), frozenset(requirement.extras)))
    return frozenset(found)


def requirements(extra: str = "") -> set[str]:
    """The distributions longscan's ``extra`` names itself (no extra: the core's)."""
    lines = metadata.requires("longscan") or []
    return {
        _normal(requirement.name)
        for requirement in map(Requirement, lines)
        if (requirement.marker is None) == (not extra)
        and (requirement.marker is None or requirement.marker.evaluate({"extra": extra}))
        and requirement.name != "longscan"
    }


@cache
def providers() -> dict[str, frozenset[str]]:
    """Each installed top-level module → the distributions that install it."""
    return {
        module: frozenset(_normal(name) for name in names)
        for module, names in metadata.packages_distributions().items()
    }


def hidden(extras: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """Every top-level module installed here that ``longscan[extras]`` does not bring, and
    every distribution."""
    allowed = distributions(extras)
    modules = sorted(
        module
        for module, names in providers().items()
        if module not in ALWAYS and not names & allowed and not module.startswith("_")
    )
    installed = {_normal(item.metadata["Name"] or "") for item in metadata.distributions()}
    return modules, sorted(installed - allowed - {_normal(name) for name in ALWAYS})


def run_hiding(
    hide: tuple[list[str], list[str]], code: str, args: list[str], **options: object
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` in a process where ``hide`` (``hidden()``) cannot be found."""
    return subprocess.run(
        [sys.executable, "-c", HIDING + code, json.dumps(hide), *args],
        capture_output=True,
        text=True,
        **options,  # type: ignore[arg-type]
    )


def load(path: Path) -> ModuleType:
    """A script of the repository (``scripts/``, ``benchmarks/``) as a module."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_exports_script() -> ModuleType:
    """``scripts/build_exports.py``: the graphs a wheel carries."""
    return load(REPO / "scripts" / "build_exports.py")


def benchmark(name: str) -> ModuleType:
    return load(REPO / "benchmarks" / f"{name}.py")
