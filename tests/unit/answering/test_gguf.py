"""Joining a model carried in parts: every part's hash and the whole's are checked, and a
wrong or missing part leaves nothing behind."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from longscan.answering.gguf import QUESTION_WRITER, PartError, join_parts


def _parts(folder: Path, contents: list[bytes]) -> tuple[list[Path], list[str], str]:
    paths = []
    for number, content in enumerate(contents, 1):
        path = folder / f"part{number:02d}.bin"
        path.write_bytes(content)
        paths.append(path)
    hashes = [hashlib.sha256(content).hexdigest() for content in contents]
    return paths, hashes, hashlib.sha256(b"".join(contents)).hexdigest()


def test_parts_join_in_order_and_are_reused_once_verified(tmp_path: Path) -> None:
    contents = [b"GGUF" + bytes(range(256)) * 40, b"second part" * 1000, b"tail"]
    parts, hashes, whole = _parts(tmp_path, contents)
    out = join_parts(parts, hashes, whole, tmp_path / "models" / "model.gguf")
    assert out.read_bytes() == b"".join(contents)
    parts[0].write_bytes(bytes(len(contents[0])))  # same size: the verified file is reused
    assert join_parts(parts, hashes, whole, out).read_bytes() == b"".join(contents)


def test_a_wrong_part_is_refused_by_number_and_nothing_is_written(tmp_path: Path) -> None:
    parts, hashes, whole = _parts(tmp_path, [b"one" * 100, b"two" * 100, b"three" * 100])
    parts[1].write_bytes(b"two" * 99 + b"TWO")  # a part from another release
    out = tmp_path / "model.gguf"
    with pytest.raises(PartError, match="model part 2 .* has SHA-256 .* expected"):
        join_parts(parts, hashes, whole, out)
    assert not out.exists() and not list(tmp_path.glob(".*partial"))


def test_a_missing_part_and_a_wrong_whole_are_refused(tmp_path: Path) -> None:
    parts, hashes, whole = _parts(tmp_path, [b"a" * 10, b"b" * 10])
    with pytest.raises(PartError, match="2 parts given, 3 recorded"):
        join_parts(parts, [*hashes, hashes[0]], whole, tmp_path / "m.gguf")
    with pytest.raises(PartError, match="joined model has SHA-256"):
        join_parts(parts, hashes, "0" * 64, tmp_path / "m.gguf")
    parts[1].unlink()
    with pytest.raises(PartError, match="model part 2 is missing"):
        join_parts(parts, hashes, whole, tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()


def test_the_question_writer_records_22_parts_and_names_its_install_command() -> None:
    assert len(QUESTION_WRITER.part_sha256) == 22
    assert all(len(h) == 64 for h in (*QUESTION_WRITER.part_sha256, QUESTION_WRITER.sha256))
    try:
        parts = QUESTION_WRITER.parts()
    except PartError as error:  # not installed: the error says how to install
        assert "longscan[question-writer]" in str(error)
    else:
        assert [p.name for p in parts] == [f"part{n:02d}.bin" for n in range(1, 23)]
