"""Instructed training queries: copies that keep their documents and labels, written in no
benchmark's words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from longscan.training.instructions import (
    instructed,
    instruction_for,
    topic_phrase,
    with_instruction_copies,
)

_WORD = re.compile(r"[a-z0-9']+")
SHINGLE = 6


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _benchmark_prompts(data_dir: Path) -> list[str]:
    """Every instruction and question of the long-context benchmarks' JSONL files."""
    prompts: list[str] = []
    for path in [*(data_dir / "loong").rglob("*.jsonl"), *(data_dir / "leval").rglob("*.jsonl")]:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            for key in ("instruction", "instructions", "question"):
                value = row.get(key, "")
                prompts.extend(value if isinstance(value, list) else [value])
    return [prompt for prompt in prompts if isinstance(prompt, str) and prompt]


def test_no_composed_instruction_shares_six_words_with_a_benchmark_prompt(data_dir: Path) -> None:
    """A benchmark's instruction stays unseen: training never reads its wording."""
    prompts = _benchmark_prompts(data_dir)
    assert len(prompts) > 100  # Loong's instructions and L-Eval's questions were read
    benchmark = set().union(*map(_shingles, prompts))
    pool = {instruction_for(str(key)) for key in range(5_000)}
    assert len(pool) > 1_000  # composed, not a handful of fixed prompts
    shared = {shingle for text in pool for shingle in _shingles(text) & benchmark}
    assert not shared


def test_copies_keep_documents_and_labels_and_end_with_their_question() -> None:
    rows = [
        (f"Who wrote chapter {i}?", (i, i + 1), np.arange(i, i + 3, dtype=np.float32), "squad/1500")
        for i in range(2_000)
    ]
    out = with_instruction_copies(rows, 0.25, "train")
    assert out[: len(rows)] == rows  # the plain examples come first, unchanged
    copies = out[len(rows) :]
    assert 0.2 < len(copies) / len(rows) < 0.3
    by_question = {row[0]: row for row in rows}
    for query, read, labels, source in copies:
        instruction, question = query.split("\n\n")
        assert instruction and question in by_question
        original = by_question[question]
        assert read == original[1] and labels is original[2]
        assert source == "squad/1500+instruction"
    assert with_instruction_copies(rows, 0.25, "train") == out  # reproducible
    assert with_instruction_copies(rows, 0.0, "train") == rows


def test_a_topic_is_words_in_a_row_of_a_unit_that_is_not_evidence(novel) -> None:
    """Named copies read an instruction that matches the material, never the evidence."""
    negatives = novel.sentence_texts()[:400]
    for key in map(str, range(200)):
        topic = topic_phrase(negatives, key)
        assert topic and 2 <= len(topic.split()) <= 7  # a trailing "-" may be stripped
        assert any(topic in " ".join(unit.split()) for unit in negatives), topic
        assert f" on {topic}" in instruction_for(key, topic)
    assert topic_phrase(["too short", "", "*   *   *", "12 34 56 78"], "k") is None
    rows = [(f"Question {i}?", (0,), None, "synthetic/chunk") for i in range(600)]
    one_unit = ["alpha beta gamma delta epsilon"]  # every phrase of 3 or more holds "gamma"
    copies = with_instruction_copies(rows, 1.0, "train", lambda example: one_unit)[600:]
    named = sum("gamma" in query for query, *_ in copies)
    assert 0.58 < named / len(copies) < 0.75  # TOPIC_SHARE of them


@pytest.mark.parametrize("key", ["a", "b", "squad/3/Who?"])
def test_an_instruction_is_a_few_whole_sentences_before_a_blank_line(key: str) -> None:
    query = instructed("What is the total revenue?", key)
    instruction, question = query.split("\n\n")
    assert question == "What is the total revenue?"
    assert instruction.endswith(".") and 8 <= len(instruction.split()) <= 60
