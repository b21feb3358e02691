"""A Word document's paragraphs and tables in order, with ``python-docx``, and the heading
path each part sits under (from the "Title" and "Heading N" styles)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from longscan.documents import DocumentError
from longscan.readers.extracted import Extracted, TextBuilder

TITLE_LEVEL = 0


def _heading_level(style_name: str) -> int | None:
    """``Heading 2`` → 2, ``Title`` → 0, anything else → None."""
    if style_name == "Title":
        return TITLE_LEVEL
    prefix, _, number = style_name.partition(" ")
    return int(number) if prefix == "Heading" and number.isdigit() else None


def read_docx(path: Path) -> Extracted:
    """Paragraphs as blocks, each table as one block with a line per row (cells apart by
    tabs); headings start a new section.

    Raises:
        DocumentError: not a Word (.docx) file, or one without any text.
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError, SyntaxError) as error:
        raise DocumentError(f"{path}: not a readable .docx file ({error})") from None
    builder = TextBuilder()
    headings: list[tuple[int, str]] = []
    for element in document.element.body.iterchildren():
        if element.tag.endswith("}p"):
            paragraph = Paragraph(element, document)
            style = paragraph.style.name if paragraph.style is not None else ""
            level = _heading_level(style or "")
            text = " ".join(paragraph.text.split())
            if level is not None and text:
                while headings and headings[-1][0] >= level:
                    headings.pop()
                headings.append((level, text))
            builder.add(paragraph.text, section=tuple(h for _, h in headings))
        elif element.tag.endswith("}tbl"):
            rows = (
                "\t".join(" ".join(cell.text.split()) for cell in row.cells)
                for row in Table(element, document).rows
            )
            builder.add("\n".join(rows), section=tuple(h for _, h in headings))
    extracted = builder.build(title=document.core_properties.title or "")
    if not extracted.text:
        raise DocumentError(f"{path}: the document holds no text")
    return extracted
