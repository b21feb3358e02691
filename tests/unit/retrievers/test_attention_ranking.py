"""Passages ranked by the packaged causal LM's attention to their [DOC i] blocks."""

from __future__ import annotations

from pathlib import Path

from longscan.retrievers.base import Units
from longscan.retrievers.registry import get_retriever


def test_attention_ranks_the_block_holding_the_questions_words_first(data_dir: Path) -> None:
    from longscan.bench.builders import build_squad_long

    retriever = get_retriever("icr-attention")
    (item,) = build_squad_long("dev", 1200, max_items=1, seed=0, data_dir=data_dir)
    (document,) = item.documents
    units = Units.of([document], "chunk")
    assert len(units) >= 4
    for target in (1, 3):  # not the first block, which attention sinks would favour
        start, end = units.spans[target]
        sentence = next(
            document.text[a:b]
            for a, b in document.sentences.tolist()
            if a >= start and b <= end and b - a > 60
        )
        scores = retriever.score_units(
            f"Is it true that {sentence.rstrip('.')}?", [document], units
        )
        assert scores.shape == (len(units),)
        assert int(scores.argmax()) == target
    evidence = retriever.retrieve(item.query, [document], top_k=2)
    for hit in evidence:
        assert hit.text == document.text[hit.start : hit.end]
