"""Keys from two folders: `bank add` of a file whose relative path is the key of a document
read from another file says so, naming both files, and counts it apart from a re-add of the
same file; --prefix keeps both. Documents given without a file (the service's uploads) are
updated as before."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.bank import MemoryBank
from longscan.cli import app
from longscan.documents import Document


def _add(bank: Path, *args: str) -> dict[str, int]:
    result = CliRunner().invoke(
        app, ["bank", "add", *args, "--bank", str(bank), "--no-sentence-vectors"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_from_another_folder_replaces_with_a_warning_or_is_kept_with_a_prefix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bank = tmp_path / "bank"
    first = _write(tmp_path / "setA" / "doc000.txt", "The harbour master logs every ship.")
    other = _write(tmp_path / "other" / "doc000.txt", "Apple trees bloom in early spring.")
    assert _add(bank, str(first.parent))["added"] == 1

    with caplog.at_level(logging.WARNING, logger="longscan.bank.store"):
        summary = _add(bank, str(other.parent))
    assert (summary["replaced"], summary["updated"], summary["documents"]) == (1, 0, 1)
    (warning,) = [r.getMessage() for r in caplog.records if "replaces" in r.getMessage()]
    assert f"doc000.txt from {other.resolve()} replaces" in warning
    assert f"from {first.resolve()} in the bank" in warning and "--prefix" in warning

    _write(other, "Apple trees bloom in early spring, and pears a week later.")
    caplog.clear()
    summary = _add(bank, str(other.parent))  # the same file again: an update, said quietly
    assert (summary["replaced"], summary["updated"]) == (0, 1)
    assert not [r for r in caplog.records if "replaces" in r.getMessage()]

    summary = _add(bank, str(first.parent), "--prefix", "setA/")
    assert (summary["added"], summary["documents"]) == (1, 2)
    store = MemoryBank(bank)
    texts = {
        d.key: d.text
        for d in store.get([store.id_of("doc000.txt"), store.id_of("setA/doc000.txt")])
    }
    assert texts == {"doc000.txt": other.read_text(), "setA/doc000.txt": first.read_text()}
    assert store.check().ok


def test_documents_without_a_file_are_updated_not_replaced(tmp_path: Path) -> None:
    bank = MemoryBank(tmp_path)
    bank.add([Document("note.txt", "First draft.", metadata={"path": "/uploads/.a.part"})])
    counts = bank.add([Document("note.txt", "Final text.", metadata={"path": "/uploads/.b.part"})])
    assert counts == {"added": 0, "updated": 1, "replaced": 0, "unchanged": 0}


def test_a_version_3_bank_gains_origins_and_keeps_its_documents(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "bank.sqlite") as db:  # the table before origins
        db.executescript(
            """CREATE TABLE documents (id INTEGER PRIMARY KEY AUTOINCREMENT,
                 key TEXT NOT NULL UNIQUE, source TEXT NOT NULL DEFAULT '',
                 domain TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL,
                 content_hash TEXT NOT NULL, text TEXT NOT NULL, added REAL NOT NULL,
                 indexed INTEGER NOT NULL DEFAULT 0, places TEXT NOT NULL DEFAULT '[]');
               CREATE INDEX documents_domain ON documents(domain);
               CREATE TABLE bank_settings (key TEXT PRIMARY KEY, value TEXT);
               INSERT INTO documents VALUES (3, 'a.txt', '', 'x', 2, 'h', 'Three.', 0, 1, '[]');
               PRAGMA user_version = 3;"""
        )
    bank = MemoryBank(tmp_path)
    assert [d.text for d in bank.get([3])] == ["Three."]
    read_from = {"origin": str(tmp_path / "one" / "a.txt")}
    assert bank.add([Document("a.txt", "Four.", metadata=read_from)])["updated"] == 1
    read_from = {"origin": str(tmp_path / "two" / "a.txt")}
    assert bank.add([Document("a.txt", "Five.", metadata=read_from)])["replaced"] == 1
