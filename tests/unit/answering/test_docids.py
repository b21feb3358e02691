"""[DOC i] prompts and the parsers that map a reply back to passages and exact offsets."""

from __future__ import annotations

import pytest

from longscan.documents import Document
from longscan.incontext.docids import (
    Format,
    Passage,
    build_prompt,
    locate_quote,
    parse_answer,
    parse_ids,
    parse_quotes,
)

DOCUMENTS = [
    Document("a", "The Eiffel Tower was completed in 1889. It is in Paris."),
    Document("b", "Mount Fuji is the highest mountain in Japan.\n\nIt last erupted in 1707."),
]
PASSAGES = [Passage(0, 0, 56), Passage(1, 0, 45), Passage(1, 47, 71)]


@pytest.mark.parametrize("fmt", list(Format))
def test_prompt_blocks_point_at_each_passage_text(fmt: Format) -> None:
    prompt = build_prompt("When did Fuji erupt?", DOCUMENTS, PASSAGES, fmt)
    for number, (passage, (start, end)) in enumerate(zip(PASSAGES, prompt.blocks, strict=True)):
        source = DOCUMENTS[passage.doc_index].text[passage.start : passage.end]
        assert prompt.text[start:end] == source
        assert prompt.text[:start].endswith(f"[DOC {number + 1}] ")
    assert prompt.text[prompt.question_start :].startswith("Question: When did Fuji erupt?")


@pytest.mark.parametrize(
    ("reply", "ids"),
    [
        ("Documents: [DOC 3], [DOC 1]\nAnswer: 1707", [3, 1]),
        ("doc 2 and Doc3 say so; see also [2].", [2, 3]),
        ("The answer is in documents 3 and 1.", [3, 1]),
        ("[DOC 9] and [DOC 0] are not shown; [DOC 2] is.", [2]),
        ("No document is relevant.", []),
    ],
)
def test_ids_are_read_in_order_once_and_only_when_shown(reply: str, ids: list[int]) -> None:
    assert parse_ids(reply, count=3) == ids


def test_quotes_and_answers_are_read() -> None:
    reply = 'Evidence: "last erupted in 1707" [DOC 3] and “completed in 1889”\nAnswer: 1707.'
    assert parse_quotes(reply) == ["last erupted in 1707", "completed in 1889"]
    assert parse_answer(reply) == "1707."
    assert parse_answer("just 1707") == "just 1707"


def test_quotes_map_to_exact_offsets_exactly_folded_or_approximately() -> None:
    exact = locate_quote("last erupted in 1707", DOCUMENTS, PASSAGES)
    assert exact is not None and exact.ratio == 1.0
    assert DOCUMENTS[exact.doc_index].text[exact.start : exact.end] == "last erupted in 1707"
    folded = locate_quote("THE EIFFEL   tower was", DOCUMENTS, PASSAGES)
    assert folded is not None and (folded.doc_index, folded.start) == (0, 0)
    assert DOCUMENTS[0].text[folded.start : folded.end] == "The Eiffel Tower was"
    near = locate_quote("Mount Fuji is the tallest mountain in Japan", DOCUMENTS, PASSAGES)
    assert near is not None and near.doc_index == 1 and 0.8 <= near.ratio < 1.0
    assert DOCUMENTS[1].text[near.start : near.end].startswith("Mount Fuji is the")
    assert locate_quote("bananas grow on trees in Ecuador", DOCUMENTS, PASSAGES) is None
