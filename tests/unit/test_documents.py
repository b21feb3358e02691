from __future__ import annotations

import codecs
from pathlib import Path

import numpy as np
import pytest

from longscan.documents import Document, DocumentError, SentencePositions, check_unique_ids
from longscan.readers.files import read_file, read_paths
from longscan.retrievers import BM25Retriever


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="no such file"):
        read_file(tmp_path / "absent.txt")


def test_binary_file_is_rejected_by_name(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(b"\x89PNG\x00\x00\x01binary")
    with pytest.raises(DocumentError, match="blob.txt.*binary"):
        read_file(path)


def test_non_utf8_is_replaced_counted_and_warned(tmp_path: Path, caplog) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Café au lait. Ça va.".encode("latin-1"))
    document = read_file(path)
    assert "\ufffd" in document.text and document.metadata["decoding_errors"] == 2
    assert "latin1.txt" in caplog.text


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_text("  \n\n ")
    with pytest.raises(DocumentError, match="no text"):
        read_file(path)


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000)
    with pytest.raises(DocumentError, match="limit"):
        read_file(path, max_bytes=100)


def test_directory_skips_binary_and_keeps_stable_relative_ids(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Alpha text.")
    (tmp_path / "sub" / "b.md").write_text("Beta text.")
    (tmp_path / "sub" / "c.txt").write_bytes(b"\x00\x01\x02")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    documents = read_paths([tmp_path])
    assert [d.id for d in documents] == ["a.txt", "sub/b.md"]


def test_directory_of_only_binary_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_bytes(b"\x00" * 10)
    with pytest.raises(DocumentError, match="no readable text"):
        read_paths([tmp_path])


def test_duplicate_ids_are_rejected() -> None:
    with pytest.raises(DocumentError, match="duplicate"):
        check_unique_ids([Document("x", "a"), Document("x", "b")])


def test_content_hash_changes_with_text() -> None:
    assert Document("a", "same").content_hash == Document("b", "same").content_hash
    assert Document("a", "same").content_hash != Document("a", "other").content_hash


TEXT = "Première ligne 𝔘.\n\nThe key is under the third stone. Then ☃ comes after."


def test_utf8_bom_is_not_part_of_the_text_and_offsets_are_exact(tmp_path: Path) -> None:
    """The convention: a byte-order mark belongs to the encoding, so the text is what
    Python's utf-8-sig codec reads, and every offset indexes that text exactly."""
    path = tmp_path / "bom.txt"
    path.write_bytes(codecs.BOM_UTF8 + TEXT.encode("utf-8"))
    document = read_file(path)
    assert document.metadata["encoding"] == "utf-8-sig"
    assert document.text == TEXT == path.read_text(encoding=document.metadata["encoding"])
    hit = BM25Retriever("sentence").retrieve("third stone", [document], top_k=1)[0]
    assert hit.text == "The key is under the third stone."
    assert (hit.start, hit.end) == (TEXT.index("The key"), TEXT.index(" Then"))
    assert document.text[hit.start : hit.end] == hit.text


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_a_bom_are_decoded_not_called_binary(
    tmp_path: Path, codec: str
) -> None:
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }[codec]
    path = tmp_path / "wide.txt"
    path.write_bytes(bom + TEXT.encode(codec))
    document = read_file(path)
    assert document.text == TEXT and document.metadata["decoding_errors"] == 0
    assert path.read_text(encoding=document.metadata["encoding"]) == TEXT  # the BOM is gone
    start = TEXT.index("The key")
    assert document.sentence_texts()[1] == TEXT[start : TEXT.index(" Then")]


def test_utf16_without_a_bom_is_refused_with_a_precise_message(tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes(TEXT.encode("utf-16-le"))
    with pytest.raises(DocumentError, match=r"NUL byte at byte 1\).*UTF-16.*byte-order mark"):
        read_file(path)


def test_a_nul_after_the_first_8_kib_is_binary_too(tmp_path: Path) -> None:
    path = tmp_path / "late.txt"
    path.write_bytes(b"Plain text. " * 2000 + b"\x00 then more text.")
    with pytest.raises(DocumentError, match="late.txt.*binary.*NUL byte at byte 24,000"):
        read_file(path)
    with pytest.raises(DocumentError, match="NUL"):  # the same through a BOM'd encoding
        path.write_bytes(codecs.BOM_UTF8 + b"Plain text. " * 2000 + b"\x00 more.")
        read_file(path)


def test_a_symlink_loop_is_reported_as_a_loop(tmp_path: Path) -> None:
    loop = tmp_path / "loop.txt"
    loop.symlink_to(tmp_path / "loop.txt")
    with pytest.raises(DocumentError, match="loop.txt: a symbolic link loop"):
        read_file(loop)
    with pytest.raises(DocumentError, match="symbolic link loop"):
        read_paths([loop])


def test_a_broken_symlink_names_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "gone.txt")
    with pytest.raises(DocumentError, match="broken symbolic link.*gone.txt"):
        read_file(link)


def test_a_symlink_loop_inside_a_folder_is_skipped_with_its_cause(tmp_path: Path, caplog) -> None:
    (tmp_path / "a.txt").write_text("Alpha text.")
    (tmp_path / "loop.txt").symlink_to(tmp_path / "loop.txt")
    assert [d.id for d in read_paths([tmp_path])] == ["a.txt"]
    assert "symbolic link loop" in caplog.text


def test_sentence_positions_cross_documents_and_skip_empty_ones() -> None:
    documents = [Document("a", "One. Two."), Document("e", ""), Document("b", "Three. Four.")]
    positions = SentencePositions(documents)
    assert positions.locate(2) == (documents[2], 0)
    assert positions.texts(np.array([0, 1, 2, 3])) == ["One.", "Two.", "Three.", "Four."]
