"""The extractive reader's training examples: real questions read in contexts like the
evidence at query time, labelled with the answer's exact characters and pieces."""

from __future__ import annotations

import random
from pathlib import Path

from longscan.answering.extractive import EVIDENCE_SEPARATOR, WindowTokenizer
from longscan.bench.builders import build_squad_long
from longscan.training.reader import (
    NO_ANSWER,
    ExampleConfig,
    example_windows,
    find_answer,
    item_examples,
)


def test_an_answer_is_found_as_whole_words_ignoring_case_and_yes_no_never() -> None:
    text = "Notably, the Normans came to Normandy in 911; no one disputes it."
    assert find_answer(text, ["normandy"]) == (29, 37)
    assert find_answer(text, ["Norman", "911"]) == (41, 44)  # "Normans" is no whole word
    assert find_answer(text, ["no", "yes"]) is None


def test_examples_hold_the_answer_in_a_gold_sentence_or_no_answer_at_all(
    data_dir: Path,
) -> None:
    items = build_squad_long("train", 5_000, max_items=40, seed=0, data_dir=data_dir)
    config = ExampleConfig(no_answer_share=0.5)
    rng = random.Random(0)
    examples = [e for item in items for e in item_examples(item, "squad", rng, config)]
    answered = [e for e in examples if e.answer_start != NO_ANSWER]
    declined = [e for e in examples if e.answer_start == NO_ANSWER]
    assert len(answered) >= 35 and declined
    answers = {item.query: item.answers for item in items}
    for example in answered:
        found = example.context[example.answer_start : example.answer_end]
        assert found.lower() in (a.lower() for a in answers[example.question])
        assert EVIDENCE_SEPARATOR not in found
    for example in declined:
        assert find_answer(example.context, answers[example.question]) is None
    tokenizer = WindowTokenizer(256)
    rows = example_windows(answered[:10], tokenizer, progress=False)
    assert sum(row["start_positions"] > 0 for row in rows) >= 10
    for example in answered[:10]:
        windows = tokenizer.windows(example.question, example.context)
        first, last = windows.answer_pieces(0, example.answer_start, example.answer_end)
        if first:
            begin, end = windows.offsets[0, first, 0], windows.offsets[0, last, 1]
            assert (begin, end) == (example.answer_start, example.answer_end)
