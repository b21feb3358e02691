"""The paper's [DOC i] formats on the packaged Gemma 3 270M: real replies, malformed ones, and
the citation retrievers built on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscan.incontext.docids import CUES, Format
from longscan.incontext.reader import InContextReader, finished
from longscan.items import QAItem
from longscan.retrievers.docids import chunk_passages


@pytest.fixture(scope="module")
def reader() -> InContextReader:
    from longscan.retrievers.registry import in_context_reader

    return in_context_reader(None)


@pytest.fixture(scope="module")
def item(data_dir: Path) -> QAItem:
    from longscan.bench.catalogue import build_benchmark

    return build_benchmark("hotpotqa-collection", "dev", 300, 1, 0, data_dir)[0]


def _inside_a_passage(documents, passages, doc_index: int, start: int, end: int) -> bool:
    return any(p.doc_index == doc_index and p.start <= start < end <= p.end for p in passages)


def test_real_replies_in_every_format_parse_to_shown_passages_and_exact_text(
    reader: InContextReader, item: QAItem
) -> None:
    passages = chunk_passages(item.documents)
    for fmt in Format:
        reply = reader.reply(item.query, item.documents, passages, fmt)
        assert reply.text.startswith(CUES[fmt]) and len(reply.text) > len(CUES[fmt])
        assert all(0 <= index < len(passages) for index in reply.cited)
        assert len(set(reply.cited)) == len(reply.cited)
        for found in reply.found:
            assert _inside_a_passage(
                item.documents, passages, found.doc_index, found.start, found.end
            )
        assert "\n" not in reply.answer
        again = reader.reply(item.query, item.documents, passages, fmt)
        assert again is reply  # kept: a second asker pays nothing


@pytest.mark.parametrize(
    "text",
    [
        '"an unterminated quote [DOC 2',
        "[DOC 99]: a passage that was never shown\nAnswer:",
        "Documents: [DOC 0], [DOC -1], DOC\nAnswer: \n",
        '"" [DOC 1] "x" ' + "\x00\ufffd" * 50,
        "",
    ],
)
def test_malformed_replies_are_read_without_error_and_name_only_shown_passages(
    item: QAItem, text: str
) -> None:
    passages = chunk_passages(item.documents)
    for fmt in Format:
        reply = InContextReader._parse(text, fmt, item.documents, passages)
        assert all(0 <= index < len(passages) for index in reply.cited)
        for found in reply.found:
            source = item.documents[found.doc_index].text
            assert 0 <= found.start < found.end <= len(source)


def test_a_reply_ends_at_its_answer_line_or_when_the_model_loops() -> None:
    assert not finished("Documents: [DOC 1], [DOC 3]\nAns")
    assert finished("Documents: [DOC 1]\nAnswer: Paris\n")
    assert not finished("Answer:\n")  # an empty answer line is not an answer
    assert finished('"a quote" [DOC 1]\n"a quote" [DOC 1]\n')
    assert not finished("[DOC 1] one\n\n[DOC 2] two\n\n")  # blank lines are not a loop
    assert finished("Answer: 1707. Then\nQuestion: what next?")


def test_citation_retrievers_return_exact_cited_text_from_the_shared_reply(
    reader: InContextReader, item: QAItem
) -> None:
    from longscan.retrievers.registry import get_retriever

    for name, fmt in (("icr-id", Format.ID), ("icr-id-q", Format.ID_Q)):
        retriever = get_retriever(name)
        evidence = retriever.retrieve(item.query, item.documents)
        reply = reader.reply(item.query, item.documents, chunk_passages(item.documents), fmt)
        assert len(evidence) <= len(reply.cited) + len(reply.found)
        by_id = {d.id: d for d in item.documents}
        for hit in evidence:
            assert hit.text == by_id[hit.doc_id].text[hit.start : hit.end]
    with pytest.raises(ValueError, match="names no documents"):
        from longscan.retrievers.docids import CitationRetriever

        CitationRetriever(reader, Format.AO)


def test_a_chat_models_template_frames_the_prompt_and_a_base_model_reads_it_bare(
    reader: InContextReader,
) -> None:
    import copy
    import dataclasses

    assert reader.lm.chat_frame() == ("", "")  # the packaged Gemma 3 270M is a base model
    tokenizer = copy.deepcopy(reader.lm.tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}<user>{{ m['content'] }}</user>{% endfor %}"
        "{% if add_generation_prompt %}<bot>{% endif %}"
    )
    chat = dataclasses.replace(reader.lm, tokenizer=tokenizer)
    assert chat.chat_frame() == ("<user>", "</user><bot>")
