"""The committed synthetic filings examples: small, rebuilt exactly from ``train-docs/``,
and none sharing more than 1% of its sentences with any evaluation document."""

from __future__ import annotations

import json
from pathlib import Path

from longscan.documents import Document
from longscan.training.data import contamination, evaluation_fingerprints
from longscan.training.synthetic import read_examples

SHIPPED = Path(__file__).parents[3] / "training-data" / "synthetic-filings"


def test_the_shipped_examples_are_small_clean_and_rebuild_from_their_sources(
    data_dir: Path,
) -> None:
    examples_file = SHIPPED / "examples.jsonl"
    assert examples_file.stat().st_size <= 20 * 2**20
    examples = read_examples(examples_file, data_dir / "train-docs")  # hashes and labels
    assert len(examples) >= 2000 and len({e.id for e in examples}) == len(examples)
    assert {e.strategy for e in examples} == {"chunk", "link"}
    assert all(e.source_id.split("/")[0] in ("cuad", "sec-full-filings", "sec-10k-item1a")
               for e in examples)  # fmt: skip
    fingerprints = evaluation_fingerprints(str(data_dir), corpus=True)
    dirty = [e.id for e in examples if contamination(Document(e.id, e.text), fingerprints) > 0.01]
    assert dirty == []
    counts = json.loads((SHIPPED / "stats.json").read_text(encoding="utf-8"))
    assert sum(counts[s]["examples"] for s in counts) >= len(examples)
    assert all(isinstance(counts[s]["dropped"], dict) for s in counts)
