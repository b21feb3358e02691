from __future__ import annotations

from pathlib import Path

import pytest

from longscan.documents import Document, DocumentError, check_unique_ids, read_file, read_paths


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
