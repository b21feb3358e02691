from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longscan.documents import Document
from longscan.segment import (
    SEGMENTERS,
    _blingfire_spans,
    count_words,
    paragraph_spans,
    segment,
    word_chunks,
)

unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=400
)
sentence_like = st.lists(
    st.sampled_from(
        [
            "Hello",
            "world",
            "Dr.",
            "é",
            "日本語",
            "🎉",
            ".",
            "!",
            "?",
            " ",
            "\n",
            "\n\n",
            "\t",
            "a.b",
            "'",
        ]
    ),
    max_size=80,
).map("".join)


def check_spans(text: str, spans: np.ndarray) -> None:
    previous_end = 0
    for start, end in spans.tolist():
        assert previous_end <= start < end <= len(text)
        unit = text[start:end]
        assert unit == unit.strip() and unit
        previous_end = end


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(unicode_text, sentence_like), st.sampled_from(SEGMENTERS))
def test_units_are_exact_ordered_stripped_spans(text: str, segmenter: str) -> None:
    sentences, paragraphs, owner = segment(text, segmenter, max_chars=50)
    check_spans(text, sentences)
    check_spans(text, paragraphs)
    assert len(owner) == len(sentences)
    for (start, end), index in zip(sentences.tolist(), owner.tolist(), strict=True):
        p_start, p_end = paragraphs[index]
        assert p_start <= start and end <= p_end  # sentences never cross paragraphs
        assert end - start <= 50


@settings(max_examples=100, deadline=None)
@given(st.one_of(unicode_text, sentence_like))
def test_no_text_is_lost(text: str) -> None:
    sentences, _, _ = segment(text, max_chars=30)
    covered = "".join(text[start:end] for start, end in sentences.tolist())
    assert "".join(covered.split()) == "".join(text.split())


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
def test_empty_and_whitespace_give_no_units(text: str) -> None:
    sentences, paragraphs, _ = segment(text)
    assert sentences.shape == (0, 2) and paragraphs.shape == (0, 2)


def test_megabyte_without_sentence_end_is_cut_into_bounded_units() -> None:
    words = " ".join(["lorem"] * 180_000)  # ~1 MB, no punctuation
    sentences, _, _ = segment(words, max_chars=1000)
    assert len(sentences) > 900
    assert (sentences[:, 1] - sentences[:, 0]).max() <= 1000
    check_spans(words, sentences)
    solid = "x" * 1_000_000  # no white space at all: hard cuts
    sentences, _, _ = segment(solid, max_chars=1000)
    assert len(sentences) == 1000 and sentences[-1, 1] == len(solid)


def test_paragraphs_split_at_blank_lines() -> None:
    text = "First para line one.\nline two.\n\n  \nSecond para.\n\n\nThird."
    spans = paragraph_spans(text)
    assert [text[s:e] for s, e in spans] == [
        "First para line one.\nline two.",
        "Second para.",
        "Third.",
    ]


def test_sentences_of_a_real_novel(novel: Document) -> None:
    texts = novel.sentence_texts()
    assert len(texts) > 1000
    assert any(t.endswith("`You're nothing but a pack of cards!'") for t in texts)
    assert "CHAPTER I" in texts  # a heading paragraph is a unit of its own
    check_spans(novel.text, novel.sentences)


def test_word_chunks_cover_every_word_once(novel: Document) -> None:
    chunks = word_chunks(novel.text, novel.sentences, 300)
    counts = [count_words(novel.text[s:e]) for s, e in chunks.tolist()]
    assert all(c == 300 for c in counts[:-1]) and 0 < counts[-1] <= 300
    in_sentences = sum(count_words(t) for t in novel.sentence_texts())
    assert sum(counts) == in_sentences


def test_unknown_segmenter_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown segmenter"):
        segment("Some text.", segmenter="nope")


def wrapper_spans(text: str) -> list[tuple[int, int]]:
    """The character spans blingfire's own Python wrapper gives."""
    import blingfire

    _, offsets = blingfire.text_to_sentences_and_offsets(text)
    return [(int(a), int(b)) for a, b in offsets]


@settings(max_examples=150, deadline=None)
@given(st.one_of(unicode_text, sentence_like).filter(lambda text: text != ""))
def test_blingfire_spans_equal_its_wrappers_character_offsets(text: str) -> None:
    """The byte-to-character mapping done with numpy gives the offsets blingfire's own
    Python wrapper gives, for any text (multi-byte characters, emoji, blank lines)."""
    assert _blingfire_spans(text) == wrapper_spans(text)


def test_blingfire_spans_of_a_real_report_equal_its_wrappers(data_dir: Path) -> None:
    """A Loong report with curly quotes, dashes and paragraphs of zero-width spaces, where
    blingfire's last offset ends inside a character (its wrapper then ends at the text's end)."""
    path = (
        data_dir / "corpus" / "loong-docs" / "financial" / "2024-ClearSign Technologies Corp-j.txt"
    )
    text = path.read_text(encoding="utf-8")
    paragraphs = [text[a:b] for a, b in paragraph_spans(text)]
    assert any(not p.isascii() for p in paragraphs) and any(
        p.strip("\u200b ") == "" for p in paragraphs
    )
    for paragraph in paragraphs:
        assert _blingfire_spans(paragraph) == wrapper_spans(paragraph)
