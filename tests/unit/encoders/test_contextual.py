from __future__ import annotations

import numpy as np
import pytest

import longscan.encoders.contextual as contextual
from longscan.documents import Document
from longscan.encoders import get_encoder
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.readers.files import read_file
from longscan.tables import row_context

PARAGRAPH = "The lighthouse keeper lit the lamp at dusk. Ships passed safely all night."


@pytest.fixture(scope="module")
def encoder() -> ContextualSentenceEncoder:
    return ContextualSentenceEncoder(get_encoder())


def test_a_paragraph_encodes_the_same_wherever_it_stands(encoder) -> None:
    alone = encoder.encode_document(Document("a", PARAGRAPH))
    inside = encoder.encode_document(
        Document("b", "Unrelated opening words here.\n\n" + PARAGRAPH + "\n\nAnd an ending.")
    )
    np.testing.assert_allclose(inside[1:3], alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(inside, axis=1), 1.0, atol=1e-5)


def test_context_changes_a_sentence_vector(encoder) -> None:
    one = encoder.encode_document(Document("a", "It was red. " + PARAGRAPH))
    other = encoder.encode_document(Document("b", "It was blue. " + PARAGRAPH))
    assert not np.allclose(one[1], other[1], atol=1e-4)


def test_blocks_and_windows_do_not_change_vectors(encoder, novel, monkeypatch) -> None:
    reference = encoder.encode_document(novel)
    monkeypatch.setattr(contextual, "BLOCK_SENTENCES", 7)
    small = ContextualSentenceEncoder(get_encoder(), batch_tokens=300)
    np.testing.assert_allclose(small.encode_document(novel), reference, atol=1e-5)


def test_paragraph_cache_reuses_encodings() -> None:
    encoder = ContextualSentenceEncoder(get_encoder(), paragraph_cache_size=100)
    encoder.encode_document(Document("a", PARAGRAPH + "\n\nSecond paragraph."))
    encoder.encode_document(Document("b", "New first one.\n\n" + PARAGRAPH))
    assert encoder.encoded_sentences == 3 + 1


def test_batches_keep_padding_small_on_many_short_paragraphs(encoder, novel) -> None:
    """Lines of very different lengths (a filing's table rows) must not be padded to the longest
    one in a huge batch: each batch is at least MIN_FILL real tokens, within batch_tokens, and
    every window is encoded once."""
    lines = [s for s in novel.sentence_texts() if s.strip()][:400]
    texts = [line[: 5 + (7 * i) % 400] for i, line in enumerate(lines)]
    windows = encoder._windows(texts, [1] * len(texts), [""] * len(texts))
    windows.sort(key=lambda window: len(window.ids))
    batches = encoder._batches(windows)
    assert [w for batch in batches for w in batch] == windows
    for batch in batches:
        width = max(len(w.ids) for w in batch) + 2
        assert width * len(batch) <= encoder.batch_tokens
        real = sum(len(w.ids) + 2 for w in batch)
        assert len(batch) == 1 or real >= contextual.MIN_FILL * width * len(batch)


def test_a_checkpoints_encoder_name_gives_back_that_encoder(novel) -> None:
    """A scanner rebuilds its encoder from the name its checkpoint records, window included:
    the shorter window reads less context, so its vectors differ."""
    short = ContextualSentenceEncoder.from_name("all-MiniLM-L6-v2/ctx64")
    assert short.name == "all-MiniLM-L6-v2/ctx64" and short.window_tokens == 64
    default = ContextualSentenceEncoder.from_name("all-MiniLM-L6-v2/ctx256")
    first = Document("p", " ".join(novel.sentence_texts()[40:60]))
    cosine = (short.encode_document(first) * default.encode_document(first)).sum(axis=1)
    assert cosine.min() < 0.999
    for wrong in ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2/ctx", "all-MiniLM-L6-v2/win64"):
        with pytest.raises(ValueError, match="ENCODER/ctxN"):
            ContextualSentenceEncoder.from_name(wrong)
    with pytest.raises(ValueError, match="unknown encoder"):
        ContextualSentenceEncoder.from_name("bge-small/ctx256")


def test_a_table_row_reads_after_its_title_header_and_group(filing_path) -> None:
    """On a real 10-Q, ``+rows`` changes only the vectors of table rows alone on their line,
    and a row that reads "Services 6,698 6,296 ..." under "Cost of sales:" becomes the
    Services row closest to a question about the cost of services; read alone it was not."""
    plain = ContextualSentenceEncoder(get_encoder(), 128)
    rows = ContextualSentenceEncoder.from_name("all-MiniLM-L6-v2/ctx128+rows")
    assert rows.table_context and rows.name == "all-MiniLM-L6-v2/ctx128+rows"
    filing = read_file(filing_path)
    assert plain.cache_key(filing) != rows.cache_key(filing)  # never each other's vectors
    assert "row_context" not in filing.__dict__  # a key is made without reading any table
    before, after = plain.encode_document(filing), rows.encode_document(filing)
    texts = filing.sentence_texts()
    changed = np.flatnonzero((before * after).sum(axis=1) < 1 - 1e-5)
    assert len(changed) > 50 and set(changed.tolist()) <= set(row_context(filing))
    services = [i for i in row_context(filing) if texts[i].startswith("Services ")]
    cost = next(i for i in services if texts[row_context(filing)[i][-1]] == "Cost of sales:")
    question = get_encoder().encode(["cost of sales for services"])[0]
    assert max(services, key=lambda i: after[i] @ question) == cost
    assert max(services, key=lambda i: before[i] @ question) != cost


def test_row_vectors_made_under_other_table_rules_are_not_reused(filing_path, monkeypatch) -> None:
    """The ``+rows`` key names the table rules' digest: after a change to ``tables.py`` a
    filing's cached vectors are made again; the plain encoder's key does not move."""
    plain = ContextualSentenceEncoder(get_encoder(), 128)
    rows = ContextualSentenceEncoder.from_name("all-MiniLM-L6-v2/ctx128+rows")
    filing = read_file(filing_path)
    before = plain.cache_key(filing), rows.cache_key(filing)
    monkeypatch.setattr(contextual, "rules_digest", lambda: "other-rules")
    assert plain.cache_key(filing) == before[0] and rows.cache_key(filing) != before[1]
