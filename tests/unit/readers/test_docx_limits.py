""".docx files built to inflate far past their size (zip bombs, parts that hold more than
they declare, compression Word never writes) are refused with a clear error before a part is
inflated whole; a real document, however compressible, still reads."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import docx
import pytest

import longscan.readers.docx as docx_reader
from longscan.documents import DocumentError
from longscan.readers.files import read_file

DOCUMENT = "word/document.xml"
SENTENCE = "The board approved the merger on 4 March."


def word_parts() -> dict[str, bytes]:
    """The parts of a one-paragraph document as python-docx writes it."""
    document = docx.Document()
    document.add_paragraph(SENTENCE)
    stream = io.BytesIO()
    document.save(stream)
    with zipfile.ZipFile(stream) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_docx(
    path: Path,
    padding: int = 0,
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A real document whose main part ends in ``padding`` spaces after its XML (written a
    MiB at a time, so the test never holds them); the main part's XML."""
    parts = word_parts()
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in parts.items():
            if name != DOCUMENT:
                archive.writestr(name, data)
        with archive.open(DOCUMENT, "w", force_zip64=True) as part:
            part.write(parts[DOCUMENT])
            for start in range(0, padding, 1 << 20):
                part.write(b" " * min(1 << 20, padding - start))
    return parts[DOCUMENT]


def declare(path: Path, name: str, size: int, crc: int | None = None) -> None:
    """Rewrite the central directory's entry for ``name`` to declare ``size`` uncompressed
    bytes (and checksum ``crc``), whatever the part holds."""
    raw = bytearray(path.read_bytes())
    start = 0
    while (start := raw.find(b"PK\x01\x02", start)) >= 0:
        length = struct.unpack_from("<H", raw, start + 28)[0]
        if raw[start + 46 : start + 46 + length] == name.encode():
            break
        start += 4
    assert start >= 0, name
    if crc is not None:
        struct.pack_into("<I", raw, start + 16, crc)
    if struct.unpack_from("<I", raw, start + 24)[0] == 0xFFFFFFFF:  # sizes in the zip64 extra
        extra = start + 46 + length
        assert struct.unpack_from("<H", raw, extra)[0] == 1
        struct.pack_into("<Q", raw, extra + 4, size)
    else:
        struct.pack_into("<I", raw, start + 24, size)
    path.write_bytes(bytes(raw))


def test_a_docx_declaring_gigabytes_is_refused_before_any_part_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bomb.docx"
    write_docx(path)
    declare(path, DOCUMENT, 3_000_000_000)

    def no_inflating(*args: object, **kwargs: object) -> None:
        raise AssertionError("a part was inflated")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_inflating)
    with pytest.raises(DocumentError, match=r"inflate to 3,0\d\d,\d{3},\d{3} bytes, over the"):
        read_file(path)


def test_a_zip_bomb_past_the_limit_is_refused_and_a_real_document_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "padded.docx"
    write_docx(path, padding=4 << 20)  # 4 MiB of spaces, a few KiB deflated
    assert path.stat().st_size < 64 << 10
    assert read_file(path).text == SENTENCE  # under the real limit: read as any document
    monkeypatch.setattr(docx_reader, "MAX_INFLATED_BYTES", 1 << 20)
    with pytest.raises(DocumentError, match="padded.docx: .* over the 1,048,576-byte limit"):
        docx_reader.read_docx(path)


@pytest.mark.parametrize("checksum_of", ["declared", "one byte more"])
def test_a_part_holding_more_than_it_declares_is_refused_in_bounded_memory(
    checksum_of: str, tmp_path: Path
) -> None:
    path = tmp_path / "lying.docx"
    xml = write_docx(path, padding=64 << 20)
    # The archive declares the XML alone, with its checksum (or that of one more byte):
    # reading only what it declares gives a valid document.
    crc = zlib.crc32(xml if checksum_of == "declared" else xml + b" ")
    declare(path, DOCUMENT, len(xml), crc)
    tracemalloc.start()
    try:
        with pytest.raises(DocumentError, match="lying.docx: (not a readable|.* inflates past)"):
            docx_reader.read_docx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the 64 MiB it holds were never inflated at once


def test_a_part_compressed_with_a_method_word_does_not_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bzip2.docx"
    write_docx(path, compression=zipfile.ZIP_BZIP2)
    with pytest.raises(DocumentError, match="compressed with method 12, which Word does not"):
        read_file(path)


def test_a_password_protected_word_file_says_so(tmp_path: Path) -> None:
    """Word saves an encrypted .docx as an OLE2 compound file, not a zip archive."""
    path = tmp_path / "locked.docx"
    sector = bytearray(512)
    sector[:8] = docx_reader.OLE2_SIGNATURE  # a compound file's header, then its sectors
    path.write_bytes(bytes(sector) + b"\0" * 4096)
    with pytest.raises(DocumentError, match="password-protected"):
        read_file(path)
    path.write_bytes(b"PK\3\4 not really a zip")
    with pytest.raises(DocumentError, match="not a readable .docx file"):
        read_file(path)
