"""Headings of real long documents: every unit finds the title line it sits under, and the
cross-encoder reads that title beside a sentence that does not name its subject."""

from __future__ import annotations

from pathlib import Path

from longscan.bench.builders import build_squad_long
from longscan.documents import Document
from longscan.headings import is_heading, section_headings
from longscan.rerankers.cross_encoder import sentence_in_context


def test_each_squad_sentence_sits_under_its_article_title(data_dir: Path) -> None:
    item = build_squad_long("dev", 20_000, max_items=1, seed=0, data_dir=data_dir)[0]
    document = item.documents[0]
    titles = [title.replace("_", " ") for title in document.metadata["articles"]]
    assert len(titles) > 2
    headings = section_headings(document)
    texts = document.sentence_texts()
    assert sorted({texts[h] for h in headings.tolist() if h >= 0}) == sorted(titles)
    for index, heading in enumerate(headings.tolist()):
        # the heading is the last title line above the unit; a title line has none
        above = [i for i in range(index) if texts[i] in titles]
        assert heading == (above[-1] if above and texts[index] not in titles else -1)


def test_the_title_is_read_beside_a_sentence_paragraphs_below_it(data_dir: Path) -> None:
    item = build_squad_long("dev", 5_000, max_items=1, seed=0, data_dir=data_dir)[0]
    document = item.documents[0]
    paragraph = document.sentence_paragraph
    heading = section_headings(document)
    # a paragraph's first sentence at least two paragraphs below its title
    index = next(
        i
        for i in range(1, len(paragraph))
        if paragraph[i] != paragraph[i - 1]
        and heading[i] >= 0
        and paragraph[i] - paragraph[heading[i]] >= 2
    )
    start, end = document.sentences[heading[index]]
    title = document.text[start:end]
    passage = sentence_in_context(document, index)
    sentence, context = passage.split(" [SEP] ")
    assert sentence == document.sentence_texts()[index] and context == title


def test_sentences_lists_and_rows_are_not_headings() -> None:
    assert is_heading("Item 7A. Quantitative and Qualitative Disclosures About Market Risk")
    assert is_heading("CHAPTER IV") and is_heading("Newcastle upon Tyne")
    assert not is_heading("Other.") and not is_heading("Risk factors include:")
    assert not is_heading("Gross margin 43,718 39,678 146,860 136,804")
    assert not is_heading("This line is a long run of words that goes on well past a title")
    text = "Short line.\n\nA Title\n\nFirst paragraph. Second.\n\nAnother paragraph."
    assert section_headings(Document("d", text)).tolist() == [-1, -1, 1, 1, 1]
    two = "First Title\n\nIts text.\n\nSecond Title\n\nIts own text."
    assert section_headings(Document("d", two)).tolist() == [-1, 0, -1, 2]
