"""Real multi-page PDFs for the tests: the bundled novel printed a known run of paragraphs
per page, so every test knows which page each sentence is on."""

from __future__ import annotations

from pathlib import Path

import matplotlib
from fpdf import FPDF

FONT = Path(matplotlib.get_data_path(), "fonts", "ttf", "DejaVuSans.ttf")  # any Unicode TTF
PAGE_CHARS = 1_500  # fits one A4 page at 10 pt, so each page holds exactly its chunk


def page_chunks(text: str, pages: int) -> list[str]:
    """``pages`` runs of whole paragraphs of ``text``, each short enough for one page."""
    chunks, current = [], ""
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph or len(paragraph) > PAGE_CHARS:
            continue
        if len(current) + len(paragraph) > PAGE_CHARS:
            chunks.append(current)
            current = ""
            if len(chunks) == pages:
                break
        current += paragraph + "\n\n"
    return chunks


def write_pdf(path: Path, chunks: list[str]) -> None:
    """One page per chunk; a chunk never flows onto the next page."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(False)
    pdf.add_font("DejaVu", fname=str(FONT))
    pdf.set_font("DejaVu", size=10)
    for chunk in chunks:
        pdf.add_page()
        pdf.multi_cell(0, 5, chunk)
    pdf.output(str(path))
