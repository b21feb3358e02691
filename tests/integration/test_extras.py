"""Each extra installs what its modules import, and nothing else is needed: every module of
longscan is imported in a process where only the libraries of the core, or of the core and
one extra, can be found (the others are hidden as if not installed). The libraries an extra
may use are its declared requirements and theirs, read from the installed metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from installed import LONGSCAN, distributions, hidden, providers, requirements, run_hiding
from longscan.extras import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "longscan"
# the extras that stand for a use (the rest gather others: test, dev)
EXTRAS = (
    "readers", "llm", "bank", "serve", "eval", "export", "train", "cluster", "llamaindex",
    "langchain", "answerer", "local-llm", "presses", "question-writer",
)  # fmt: skip
# the packages that need an extra to import; every other module imports with the core
OWNERS = {
    "longscan.service": "serve",
    "longscan.evaluation": "eval",
    "longscan.bench": "eval",
    "longscan.models": "export",
    "longscan.ops": "export",
    "longscan.training": "train",
    "longscan.integrations.llamaindex": "llamaindex",
    "longscan.integrations.langchain": "langchain",
    "longscan.incontext.compression": "presses",
}
CHILD = """
import importlib
failed = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except Exception as error:
        failed[module] = [type(error).__name__, getattr(error, "name", None), str(error)]
print(json.dumps(failed))
"""


def modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def import_failures(extras: frozenset[str], names: list[str]) -> dict[str, list]:
    """``names`` that fail to import with only ``longscan[extras]`` installed, and why."""
    done = run_hiding(hidden(extras), CHILD, [json.dumps(names)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def owner(module: str) -> str | None:
    """The extra ``module`` needs, by its longest listed package; None: the core's."""
    for prefix in sorted(OWNERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return OWNERS[prefix]
    return None


@pytest.fixture(scope="module")
def core_failures() -> dict[str, list]:
    return import_failures(frozenset(), modules())


def test_the_core_imports_every_module_but_the_extras_own(core_failures: dict) -> None:
    """The command line and everything ``ask`` runs import without torch or any extra; the
    modules that need an extra fail on a library the command line names the extra for."""
    assert {"torch", "fastapi"} <= set(hidden()[0])
    assert not {name: why for name, why in core_failures.items() if owner(name) is None}
    for kind, library, _message in core_failures.values():
        assert kind.endswith("Error") and library.split(".")[0] in PROVIDERS


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_imports_its_modules_alone(extra: str) -> None:
    """The modules an extra owns, and every library the extra names, import with the core
    and this extra only."""
    declared = requirements(extra)
    libraries = sorted(
        module
        for module, names in providers().items()
        if names & declared and not module.startswith("_")
    )
    assert libraries, extra
    needing = [name for name in modules() if owner(name) == extra]
    assert not import_failures(frozenset({extra}), needing + libraries)


def test_the_table_of_extras_matches_the_declared_requirements() -> None:
    """Each library in longscan.extras comes with its extra, and the core does not declare
    it (another library of the core may bring it: huggingface-hub brings httpx)."""
    direct = requirements()
    for module, extra in PROVIDERS.items():
        names = providers().get(module)
        if names is None:  # not installed here (the local models), nothing to compare
            continue
        assert names & distributions(frozenset({extra})), (module, extra)
        assert not names & direct, (module, "is a requirement of the core")


def test_a_command_whose_extra_is_missing_says_what_to_install(tmp_path: Path) -> None:
    done = run_hiding(
        hidden(),
        LONGSCAN,
        ["serve", "--port", "0"],
        timeout=300,
        env={"LONGSCAN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "80"},
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert 'pip install "longscan[serve]"' in done.stderr
    assert "Traceback" not in done.stderr
