"""A Word document's paragraphs and tables in order, with ``python-docx``, and the heading
path each part sits under (from the "Title" and "Heading N" styles)."""

from __future__ import annotations

import copy
import zipfile
import zlib
from pathlib import Path

from longscan.documents import DocumentError
from longscan.readers.extracted import Extracted, TextBuilder

TITLE_LEVEL = 0
# Word writes a password-protected .docx (and a legacy .doc) as an OLE2 compound file
OLE2_SIGNATURE = bytes.fromhex("d0cf11e0a1b11ae1")
MAX_INFLATED_BYTES = 1 << 29
"""The most the parts of one .docx may inflate to, all together (512 MiB). python-docx holds
every part in memory at once, so a zip bomb (a few MB that inflate to gigabytes) would take
gigabytes. Real documents stay far below: Word caps a document's text at 32 MB, the XML
around it takes a few times that (a 10-K's ``word/document.xml`` is tens of MB), and pictures
inflate to about their compressed size."""
INFLATE_CHUNK = 1 << 20  # bytes inflated at a time while checking a part's real size
# Word writes parts stored or deflated; zipfile inflates other methods (bzip2, LZMA) in steps
# of unbounded size, so a part compressed with them is refused unread.
COMPRESSIONS = frozenset((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))


def _heading_level(style_name: str) -> int | None:
    """``Heading 2`` → 2, ``Title`` → 0, anything else → None."""
    if style_name == "Title":
        return TITLE_LEVEL
    prefix, _, number = style_name.partition(" ")
    return int(number) if prefix == "Heading" and number.isdigit() else None


def _check_inflated_size(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse an archive whose parts inflate past ``MAX_INFLATED_BYTES`` before python-docx
    inflates any part whole: first by the sizes the archive declares, then by inflating each
    part a chunk at a time, to one byte past its declared size, so a part that holds more
    than it declares (a header that lies) is caught too, one chunk in memory at a time.

    Raises:
        DocumentError: over the limit, a part over its declared size or compressed with a
            method Word does not use, or a damaged archive.
    """
    parts = archive.infolist()
    declared = sum(part.file_size for part in parts)
    if declared > MAX_INFLATED_BYTES:
        raise DocumentError(
            f"{path}: its parts inflate to {declared:,} bytes, over the "
            f"{MAX_INFLATED_BYTES:,}-byte limit for one .docx file (a zip bomb, or a document "
            "to split); not read"
        )
    for part in parts:
        if part.compress_type not in COMPRESSIONS:
            raise DocumentError(
                f"{path}: part {part.filename!r} is compressed with method "
                f"{part.compress_type}, which Word does not write; not read"
            )
        bounded = copy.copy(part)
        bounded.file_size = part.file_size + 1
        inflated = 0
        try:
            with archive.open(bounded) as stream:
                while chunk := stream.read(INFLATE_CHUNK):
                    inflated += len(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError) as error:
            raise DocumentError(f"{path}: not a readable .docx file ({error})") from None
        if inflated > part.file_size:
            raise DocumentError(
                f"{path}: part {part.filename!r} inflates past the {part.file_size:,} bytes "
                "its archive declares (a damaged or forged archive); not read"
            )


def read_docx(path: Path) -> Extracted:
    """Paragraphs as blocks, each table as one block with a line per row (cells apart by
    tabs); headings start a new section.

    Raises:
        DocumentError: not a Word (.docx) file, one that would inflate past
            ``MAX_INFLATED_BYTES``, or one without any text.
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    with path.open("rb") as file:
        try:
            archive = zipfile.ZipFile(file)
        except zipfile.BadZipFile as error:
            file.seek(0)
            if file.read(len(OLE2_SIGNATURE)) == OLE2_SIGNATURE:
                raise DocumentError(
                    f"{path}: an OLE2 compound file, not a .docx archive: a password-protected "
                    "(encrypted) Word document, or a legacy .doc; save a copy without the "
                    "password, as .docx"
                ) from None
            raise DocumentError(f"{path}: not a readable .docx file ({error})") from None
        with archive:
            _check_inflated_size(path, archive)
        file.seek(0)
        try:
            document = docx.Document(file)
        except (
            zipfile.BadZipFile,
            PackageNotFoundError,
            KeyError,
            ValueError,
            SyntaxError,
        ) as error:
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
