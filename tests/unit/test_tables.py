"""Table rows of a real filing: they stay units with exact offsets, and each finds the lines
that say what it means (title, column header, row group) among the units above it."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscan.answering.pipelines import format_evidence
from longscan.documents import Document, Evidence
from longscan.readers.files import read_file
from longscan.rerankers.cross_encoder import sentence_in_context
from longscan.selection import with_table_context
from longscan.tables import (
    is_column_header,
    is_label,
    is_period_line,
    is_row,
    row_context,
    running_headers,
)


@pytest.fixture(scope="module")
def filing(filing_path: Path) -> Document:
    return read_file(filing_path)


def test_rows_keep_exact_offsets_and_their_context_lies_above(filing: Document) -> None:
    texts = filing.sentence_texts()
    context = row_context(filing)
    assert len(context) > 50
    for row, lines in context.items():
        start, end = filing.sentences[row]
        assert filing.text[start:end] == texts[row] and is_row(texts[row])
        assert all(0 <= line < row for line in lines) and list(lines) == sorted(set(lines))


def test_a_cost_row_reads_with_its_statement_its_quarters_and_its_group(
    filing: Document,
) -> None:
    texts = filing.sentence_texts()
    row = next(i for i, t in enumerate(texts) if t.startswith("Services 6,698 6,296"))
    lines = [texts[i] for i in row_context(filing)[row]]
    assert lines[0].startswith("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS")
    assert not any(line.startswith("(In millions") for line in lines)  # a note, passed over
    assert any(is_column_header(line) and "2025" in line for line in lines)
    assert lines[-1] == "Cost of sales:"  # not "Net sales:", the group above it
    passage = sentence_in_context(filing, row)
    assert passage.startswith(texts[row] + " [SEP] CONDENSED CONSOLIDATED STATEMENTS OF")
    assert "Cost of sales:" in passage


def test_a_row_deep_in_a_statement_still_finds_its_header_and_title(filing: Document) -> None:
    """A section label inside the table ("LIABILITIES AND SHAREHOLDERS' EQUITY:") is not
    the table's title: the walk goes on up to the column header and the title above it."""
    texts = filing.sentence_texts()
    row = next(i for i, t in enumerate(texts) if t.startswith("Total liabilities "))
    lines = [texts[i] for i in row_context(filing)[row]]
    title = lines.index("Apple Inc.")
    assert lines[title + 1].startswith("CONDENSED CONSOLIDATED BALANCE SHEETS")
    assert any(is_column_header(line) and "2025" in line for line in lines)
    assert row - min(row_context(filing)[row]) > 20  # far above the row


def test_a_period_line_is_part_of_the_header_and_a_total_closes_its_group(
    data_dir: Path,
) -> None:
    """Netflix's balance sheet dates its columns on two lines ("As of December 31," over
    "2024 2023"): the first belongs to the column header, so the title block above it (the
    issuer and the statement) is still found. "Total current assets" closes "Current
    assets:", so the rows below it are read without that group."""
    filing = read_file(
        data_dir / "train-docs" / "sec-full-filings" / "nflx_nflx-10-k-2025-01-27.txt"
    )
    texts = filing.sentence_texts()
    context = row_context(filing)

    def read_with(prefix: str) -> list[str]:
        row = next(i for i in context if texts[i].startswith(prefix))
        return [" ".join(texts[i].split()) for i in context[row]]

    total = read_with("Total assets ")
    assert total[:4] == ["NETFLIX, INC.", "CONSOLIDATED BALANCE SHEETS", "As of December 31,",
                         "2024 2023"]  # fmt: skip
    assert is_period_line("As of December 31,") and "Current assets:" not in total
    assert read_with("Total current assets ")[-1] == "Current assets:"
    assert read_with("Cash and cash equivalents $")[-1] == "Current assets:"
    assert not is_period_line("2024 2023 2022 1,390 1,693") and not is_period_line(
        "The Company adopted the standard on January 1, 2024."
    )  # a row, and a sentence


def test_running_page_headers_are_never_a_rows_context(data_dir: Path) -> None:
    filing = read_file(
        data_dir / "train-docs" / "sec-full-filings" / "nflx_nflx-10-q-2025-07-18.txt"
    )
    texts = filing.sentence_texts()
    furniture = running_headers(texts, [is_label(text) for text in texts])
    assert len(furniture) >= 10
    assert {" ".join(texts[i].split()) for i in furniture} == {"Table of Contents"}
    context = row_context(filing)
    assert len(context) > 50
    assert not any(line in furniture for lines in context.values() for line in lines)


def test_prose_is_neither_row_nor_label() -> None:
    prose = "Net sales rose in the quarter, driven by higher Services revenue of $27.4 billion."
    assert not is_row(prose) and not is_label(prose)
    assert not is_row("It grew again in 2024 and 2025, by 3% and 4%.")
    assert is_row("Gross margin 43,718 39,678 146,860 136,804") and is_label("Net sales:")
    assert is_label("Ascent Industries Co.") and is_label("AIM IMMUNOTECH INC.")
    assert not is_label("The stock rose.") and not is_label("Item 1.")
    document = Document("d", "Revenue grew.\n\nIt grew again in 2024 and 2025, by 3% and 4%.")
    assert row_context(document) == {}


def test_a_row_given_as_evidence_is_shown_to_the_answerer_with_its_table(
    filing: Document,
) -> None:
    texts = filing.sentence_texts()
    row = next(i for i, t in enumerate(texts) if t.startswith("Services 6,698 6,296"))
    prose = next(i for i, t in enumerate(texts) if t.endswith(".") and len(t.split()) > 12)

    def unit(index: int, end: int | None = None) -> Evidence:
        start, stop = filing.sentences[index].tolist()
        return Evidence.of(filing, start, stop if end is None else end, 1.0, index)

    row_line, next_row_line, chunk_line, prose_line = format_evidence(
        [unit(row), unit(row + 1), unit(row, filing.sentences[row + 1][1]), unit(prose)],
        [filing],
    ).splitlines()
    assert row_line.startswith(  # one document: lines carry no document label
        f"[1] {' '.join(texts[row].split())} {{CONDENSED CONSOLIDATED"
    )
    assert row_line.endswith("| Cost of sales:}") and "2025" in row_line
    assert row_context(filing)[row + 1] == row_context(filing)[row]
    assert "{" not in next_row_line  # the same table, said once
    assert "{" not in chunk_line and "{" not in prose_line  # a chunk, and prose, get none
    assert format_evidence([unit(row)]) == f"[1] {' '.join(texts[row].split())}"


def test_a_ranked_row_brings_its_context_units_once_with_exact_offsets(
    filing: Document,
) -> None:
    """Before each table row the ranking gains the units that say what the row means, as
    evidence with exact offsets; a context unit is given once, also when ranked itself
    later, and prose and chunks pass unchanged."""
    texts = filing.sentence_texts()
    services = next(i for i, t in enumerate(texts) if t.startswith("Services 6,698 6,296"))
    products = services - 1  # the row above it, in the same table and group
    prose = next(i for i, t in enumerate(texts) if t.endswith(".") and len(t.split()) > 12)
    context = row_context(filing)[services]
    assert row_context(filing)[products] == context and texts[products].startswith("Products")

    def unit(index: int, score: float) -> Evidence:
        start, end = filing.sentences[index].tolist()
        return Evidence.of(filing, start, end, score, index)

    chunk = Evidence.of(filing, int(filing.sentences[services, 0]), len(filing.text), 0.5, 0)
    ranking = [unit(prose, 0.9), unit(services, 0.8), chunk, unit(products, 0.7)]
    ranking.append(unit(context[0], 0.1))  # the statement's title, ranked on its own
    widened = with_table_context(ranking, [filing])
    assert [e.unit for e in widened] == [prose, *context, services, 0, products]
    assert widened[2 + len(context)] == chunk
    for item in widened:
        assert filing.text[item.start : item.end] == item.text
    assert all(item.score == 0.8 for item in widened[1 : 2 + len(context)])
    assert with_table_context(ranking[:1], [filing]) == ranking[:1]


def test_loong_rag_evidence_shows_a_row_with_its_table_as_the_answerer_sees_it(
    filing: Document,
) -> None:
    """Loong's RAG setting cuts each report down to its evidence: a row in it carries its
    title and header in braces, as ``format_evidence`` gives it, and is not a bare line."""
    from longscan.bench.qa import evidence_documents
    from longscan.retrievers.registry import get_retriever
    from longscan.tables import table_context

    texts = filing.sentence_texts()
    row = next(i for i, t in enumerate(texts) if t.startswith("Services 6,698 6,296"))
    report = Document(filing.id, filing.text, metadata={"header": "《Apple》"})
    (cut,) = evidence_documents(
        get_retriever("bm25-sentence"), "Services 6,698 6,296", [report], budget_words=60
    )
    lines = cut.text.splitlines()
    assert lines[0] == "《Apple》"
    start, end = filing.sentences[row].tolist()
    context = table_context(report, Evidence.of(report, start, end, 1.0, row))
    expected = f"{' '.join(texts[row].split())} {{{context}}}"
    assert expected in lines and "CONDENSED CONSOLIDATED" in expected
