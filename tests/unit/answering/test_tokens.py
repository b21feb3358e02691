"""Token counts of texts past the tokenizer's one-call limit."""

from __future__ import annotations

import pytest

from longscan.answering import tokens
from longscan.answering.tokens import count_tokens

SENTENCE = "The ferry across the river was late  again, said Mara.\n\nIt rained. "


def test_counting_in_pieces_matches_counting_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    text = SENTENCE * 3_000
    whole = len(tokens._encoding().encode(text, disallowed_special=()))
    monkeypatch.setattr(tokens, "PIECE_CHARS", 1_000)
    assert count_tokens(text) == whole


def test_a_text_over_a_million_characters_is_counted() -> None:
    repeats = 1_100_000 // len(SENTENCE)
    assert count_tokens(SENTENCE * repeats) == pytest.approx(
        count_tokens(SENTENCE * 1_000) * repeats / 1_000, rel=1e-3
    )
