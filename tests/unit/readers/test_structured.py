"""HTML, DOCX and Markdown with the heading path of every unit, on pages written from real
SQuAD articles (each article's title a heading above its paragraphs)."""

from __future__ import annotations

import html
from pathlib import Path

import docx
import pytest

from longscan.bench.datasets import SquadArticle, load_squad
from longscan.documents import DocumentError
from longscan.readers.files import read_file, read_paths
from longscan.retrievers import get_retriever


@pytest.fixture(scope="module")
def articles(data_dir: Path) -> list[SquadArticle]:
    return load_squad(data_dir)[:3]


def write_html(path: Path, articles: list[SquadArticle]) -> None:
    body = [
        "<nav><a href='/'>Home</a> <a href='/x'>Menu link</a></nav>",
        "<script>var tracking = 'never read';</script>",
        "<main><h1>Collected articles</h1>",
    ]
    for article in articles:
        body.append(f"<h2>{html.escape(article.heading)}</h2>")
        body += [f"<p>{html.escape(p.context)}</p>" for p in article.paragraphs[:4]]
    body.append(
        "<table><tr><th>Year</th><th>2023</th><th>2024</th></tr>"
        "<tr><td>Revenue</td><td>1,200</td><td>1,450</td></tr></table></main>"
        "<footer>Copyright notice</footer>"
    )
    path.write_text(f"<html><head><title>Test</title></head><body>{''.join(body)}</body></html>")


def write_docx(path: Path, articles: list[SquadArticle]) -> None:
    document = docx.Document()
    document.add_heading("Collected articles", 0)
    for article in articles:
        document.add_heading(article.heading, 1)
        for paragraph in article.paragraphs[:4]:
            document.add_paragraph(paragraph.context)
    table = document.add_table(rows=2, cols=3)
    rows = [("Year", "2023", "2024"), ("Revenue", "1,200", "1,450")]
    for row, cells in zip(table.rows, rows, strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    document.save(str(path))


@pytest.mark.parametrize("suffix", [".html", ".docx"])
def test_every_answer_cites_its_article_heading(
    suffix: str, articles: list[SquadArticle], tmp_path: Path
) -> None:
    path = tmp_path / f"articles{suffix}"
    (write_html if suffix == ".html" else write_docx)(path, articles)
    document = read_file(path)
    assert "tracking" not in document.text and "Menu link" not in document.text
    assert "Copyright" not in document.text
    checked = 0
    for article in articles:
        for paragraph in article.paragraphs[:4]:
            at = document.text.find(paragraph.context.strip())
            assert at >= 0
            for question in paragraph.questions:
                for answer, start in question.answers:
                    offset = at + start
                    assert document.text[offset : offset + len(answer)] == answer
                    place = document.place(offset)
                    assert place.section == ("Collected articles", article.heading)
                    checked += 1
    assert checked > 50
    row = document.text.index("Revenue")
    assert document.text[row : document.text.index("\n", row) if "\n" in document.text[row:]
                         else None].split("\t") == ["Revenue", "1,200", "1,450"]  # fmt: skip
    for evidence in get_retriever("bm25-sentence").retrieve(
        articles[1].paragraphs[0].questions[0].question, [document], top_k=5
    ):
        assert document.text[evidence.start : evidence.end] == evidence.text
        assert evidence.section == document.place(evidence.start).section
        assert evidence.where == " › ".join(evidence.section)


def test_markdown_headings_leave_the_text_as_written(tmp_path: Path) -> None:
    text = (
        "Preface before any heading.\r\n\r\n# Part One\r\n\r\nIntro text.\r\n\r\n"
        "```\r\n# not a heading: code\r\n```\r\n\r\nChapter 1\r\n---------\r\n\r\n"
        "The first chapter.\r\n\r\n### Notes\r\n\r\nA note.\r\n\r\n# Part Two\r\n\r\nEnd.\r\n"
    )
    path = tmp_path / "book.md"
    path.write_bytes(text.encode("utf-8"))
    document = read_file(path)
    assert document.text == text
    assert document.place(text.index("Preface")) is None
    assert document.place(text.index("not a heading")).section == ("Part One",)
    assert document.place(text.index("The first")).section == ("Part One", "Chapter 1")
    assert document.place(text.index("A note")).section == ("Part One", "Chapter 1", "Notes")
    assert document.place(text.index("End.")).section == ("Part Two",)
    assert document.place(text.index("# Part Two")).start == text.index("# Part Two")


def test_damaged_files_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip archive")
    with pytest.raises(DocumentError, match="not a readable .docx"):
        read_file(tmp_path / "broken.docx")
    (tmp_path / "empty.html").write_text("<html><body><script>only code</script></body></html>")
    with pytest.raises(DocumentError, match="no text"):
        read_file(tmp_path / "empty.html")


def test_a_folder_reads_every_format(articles: list[SquadArticle], tmp_path: Path) -> None:
    write_html(tmp_path / "a.html", articles)
    write_docx(tmp_path / "b.docx", articles)
    (tmp_path / "c.txt").write_text("Plain text.")
    (tmp_path / "d.bin").write_bytes(b"\x00\x01")
    documents = read_paths([tmp_path])
    assert [d.id for d in documents] == ["a.html", "b.docx", "c.txt"]
    assert [d.metadata.get("format") for d in documents] == ["html", "docx", None]
