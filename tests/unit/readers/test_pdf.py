"""PDF text with the page of every unit, on a multi-page PDF written from the bundled novel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fpdf import FPDF

import longscan.readers.pdf as pdf_reader
from longscan.documents import DocumentError
from longscan.readers import READERS, read_document
from longscan.readers.files import read_file
from longscan.retrievers import get_retriever
from printed_pdf import page_chunks, write_pdf


@pytest.fixture(scope="module")
def novel_pdf(tmp_path_factory: pytest.TempPathFactory, novel_path: Path) -> tuple[Path, list[str]]:
    chunks = page_chunks(novel_path.read_text(encoding="utf-8"), pages=12)
    path = tmp_path_factory.mktemp("pdf") / "alice.pdf"
    write_pdf(path, chunks)
    return path, chunks


def test_every_paragraph_cites_the_page_it_was_printed_on(novel_pdf, tmp_path: Path) -> None:
    path, chunks = novel_pdf
    document = read_document(path, "alice.pdf", cache_dir=tmp_path)
    assert document.metadata["pages"] == len(chunks) == 12
    word_starts = [match.start() for match in re.finditer(r"\S+", document.text)]
    flat = " ".join(document.text.split())
    checked = 0
    for number, chunk in enumerate(chunks, start=1):
        for paragraph in chunk.split("\n\n"):
            words = " ".join(paragraph.split())
            if len(words) < 40:
                continue
            found = flat.find(words)
            assert found >= 0, words[:60]
            first_word = word_starts[len(flat[:found].split())]
            assert document.place(first_word).page == number
            checked += 1
    assert checked >= 24


def test_retrieved_evidence_names_its_page_and_slices_the_text(novel_pdf, tmp_path: Path) -> None:
    path, chunks = novel_pdf
    document = read_document(path, "alice.pdf", cache_dir=tmp_path)
    hits = 0
    for number, chunk in enumerate(chunks, start=1):
        sentence = max(chunk.split(". "), key=len)  # a long, distinctive sentence as the query
        top = get_retriever("bm25-sentence").retrieve(sentence[:300], [document], top_k=1)[0]
        assert document.text[top.start : top.end] == top.text
        assert top.to_json()["page"] == top.page == document.place(top.start).page
        hits += top.page == number
    assert hits >= len(chunks) - 1


def test_a_scanned_pdf_without_text_is_a_clear_error(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 100, style="F")  # a page of drawing, as a scan is a page of image
    pdf.output(str(tmp_path / "scan.pdf"))
    with pytest.raises(DocumentError, match="no.*text layer|scanned"):
        read_file(tmp_path / "scan.pdf")


def test_a_file_that_is_not_a_pdf_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "fake.pdf").write_text("plain text pretending to be a PDF")
    with pytest.raises(DocumentError, match="not a readable PDF"):
        read_file(tmp_path / "fake.pdf")


def write_encrypted(path: Path, user_password: str | None) -> None:
    """A one-line PDF encrypted with an owner password and, when given, a user password (the
    one a reader must type to open it)."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Quarterly revenue rose by four percent.")
    pdf.set_encryption(owner_password="owner secret", user_password=user_password)
    pdf.output(str(path))


def test_a_password_protected_pdf_is_a_clear_error(tmp_path: Path) -> None:
    write_encrypted(tmp_path / "locked.pdf", user_password="reader secret")
    with pytest.raises(DocumentError, match=r"locked.pdf: the PDF is encrypted \(password-prot"):
        read_file(tmp_path / "locked.pdf")


def test_a_pdf_encrypted_only_against_editing_still_reads(tmp_path: Path) -> None:
    write_encrypted(tmp_path / "restricted.pdf", user_password=None)
    assert read_file(tmp_path / "restricted.pdf").text == "Quarterly revenue rose by four percent."


def test_a_pdf_with_more_text_than_one_document_holds_is_refused(
    novel_pdf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = novel_pdf
    monkeypatch.setattr(pdf_reader, "MAX_TEXT_CHARS", 2_000)
    with pytest.raises(DocumentError, match=r"alice.pdf: its text passes 2,000 characters by pa"):
        read_document(path, "alice.pdf", cache_dir=tmp_path)


def test_the_extraction_is_cached_by_content(novel_pdf, tmp_path: Path, monkeypatch) -> None:
    path, _ = novel_pdf
    first = read_document(path, "a", cache_dir=tmp_path)
    library, _reader = READERS[".pdf"]

    def refuse(_path: Path):
        raise AssertionError("extracted again")

    monkeypatch.setitem(READERS, ".pdf", (library, refuse))
    again = read_document(path, "a", cache_dir=tmp_path)
    assert (again.text, again.places) == (first.text, first.places)
    # a damaged cache entry is extracted again, never half-read
    (text,) = (tmp_path / "extracted").glob("*.txt")
    text.write_text(text.read_text()[:100])  # cut short: it no longer matches its hash
    with pytest.raises(AssertionError, match="extracted again"):
        read_document(path, "a", cache_dir=tmp_path)
