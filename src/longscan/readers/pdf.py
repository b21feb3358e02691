"""PDF text, one page at a time, with pdfium (``pypdfium2``, permissive licence)."""

from __future__ import annotations

from pathlib import Path

from longscan.documents import DocumentError
from longscan.progress import track
from longscan.readers.extracted import Extracted, TextBuilder
from longscan.readers.files import DEFAULT_MAX_BYTES

PROGRESS_PAGES = 50  # longer PDFs show a progress bar while their text is read
# pdfium writes a hyphen that ends a printed line as U+FFFE (some builds: U+0002) and drops
# the line break after it; the printed text had both.
LINE_END_HYPHENS = ("\ufffe", "\x02")
MAX_TEXT_CHARS = DEFAULT_MAX_BYTES
"""The most characters of text one PDF may yield: as many as the bytes of a text file
``read_file`` accepts. A PDF's page contents are compressed (pdfium inflates each stream to
1 GiB at most) and pages may share them, so a small file can hold far more text than its
size; past this, reading stops with an error instead of filling memory."""


def read_pdf(path: Path) -> Extracted:
    """Every page's text layer, each page a block of its own, so no unit crosses a page and
    every unit cites the page it is on. Pages are opened and closed one by one: memory grows
    with the text, not with the page count.

    Raises:
        DocumentError: not a PDF, encrypted with a password, over ``MAX_TEXT_CHARS`` of
            text, or without any text layer (scanned).
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as error:
        if error.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise DocumentError(
                f"{path}: the PDF is encrypted (password-protected); save a copy without the "
                "password (for example `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) "
                "and read that"
            ) from None
        if error.err_code == pdfium_c.FPDF_ERR_SECURITY:
            raise DocumentError(
                f"{path}: the PDF is encrypted with a security handler pdfium does not "
                "support; save a decrypted copy and read that"
            ) from None
        raise DocumentError(f"{path}: not a readable PDF ({error})") from None
    builder = TextBuilder()
    try:
        pages = len(pdf)
        for index in track(range(pages), f"reading {path.name}", enabled=pages >= PROGRESS_PAGES):
            page = pdf[index]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
                for marker in LINE_END_HYPHENS:
                    text = text.replace(marker, "-\n")
                builder.add(text, page=index + 1)
                if len(builder) > MAX_TEXT_CHARS:
                    raise DocumentError(
                        f"{path}: its text passes {MAX_TEXT_CHARS:,} characters by page "
                        f"{index + 1:,} of {pages:,}, over the limit for one document; split "
                        "the PDF or add it to a memory bank"
                    )
            finally:
                textpage.close()
                page.close()
    finally:
        pdf.close()
    extracted = builder.build(pages=pages)
    if not extracted.text:
        raise DocumentError(
            f"{path}: none of its {pages:,} page(s) has a text layer: a scanned PDF? "
            "Add one with OCR (for example `ocrmypdf`) and try again"
        )
    return extracted
