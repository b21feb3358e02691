"""Ingestion without Ray: a small `bank add` runs in its own process, starts no cluster, and
stores and indexes exactly what the Ray path does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from longscan.bank import MemoryBank
from longscan.bank.search import first_stage
from longscan.documents import Document

ADD_AND_REPORT = """
import sys
from longscan.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print("ray imported:", "ray" in sys.modules, file=sys.stderr)
"""


def test_bank_add_of_ten_files_never_imports_ray(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, document in enumerate(paragraphs[:10]):
        (folder / f"{i}.txt").write_text(document.text)
    command = [sys.executable, "-c", ADD_AND_REPORT, "bank", "add", str(folder),
               "--bank", str(tmp_path / "bank"), "--no-sentence-vectors"]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "ray imported: False" in run.stderr
    assert json.loads(run.stdout[run.stdout.index("{") :])["added"] == 10
    bank = MemoryBank(tmp_path / "bank")
    assert bank.stats()["index_entries"] == {"bm25": 10, "dense": 10}
    assert bank.check().ok
    for method in ("bm25", "dense"):  # a document is found by its own text in both indexes
        (doc_id, _score), *_ = first_stage(bank, paragraphs[3].text[:300], 1, method)
        assert doc_id == bank.id_of("3.txt")


IN_ORDER_HERE = """
from longscan.parallel import bounded_map, execution, on_ray, workers
with execution(None):
    results = list(bounded_map(lambda x: x * x, ((i, (i,)) for i in range(5)), 2))
print(on_ray(), workers(), results)
"""


def test_without_a_session_calls_run_here_in_order() -> None:
    """In a process of its own: this test session may hold a Ray session for other tests."""
    run = subprocess.run([sys.executable, "-c", IN_ORDER_HERE], capture_output=True, text=True,
                         timeout=120, check=True)  # fmt: skip
    assert run.stdout.strip() == f"False 1 {[(i, i * i) for i in range(5)]}"
