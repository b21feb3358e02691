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


def _longscan_modules_after(code: str) -> list[str]:
    code += "\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('longscan'))))"
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.split()


def test_the_core_types_import_no_other_longscan_module() -> None:
    assert _longscan_modules_after("import longscan.documents") == [
        "longscan",
        "longscan.documents",
    ]


def test_segmentation_loads_when_a_document_is_first_segmented() -> None:
    loaded = _longscan_modules_after(
        "from longscan.documents import Document\n"
        "assert Document('d', 'One. Two.').sentences.tolist() == [[0, 4], [5, 9]]"
    )
    assert loaded == ["longscan", "longscan.documents", "longscan.segment"]


def test_the_documents_defaults_are_the_segmenters() -> None:
    from longscan.documents import DEFAULT_MAX_CHARS, DEFAULT_SEGMENTER
    from longscan.segment import DEFAULT_MAX_CHARS as SEGMENT_MAX_CHARS
    from longscan.segment import DEFAULT_SEGMENTER as SEGMENT_SEGMENTER

    assert (DEFAULT_SEGMENTER, DEFAULT_MAX_CHARS) == (SEGMENT_SEGMENTER, SEGMENT_MAX_CHARS)
