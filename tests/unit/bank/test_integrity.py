"""A bank's integrity: one writer at a time, check and repair, crashes inside remove, ids
never reused, damaged files, and a mistyped folder."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from bank_checks import assert_each_document_once
from typer.testing import CliRunner

from longscan.bank import MemoryBank
from longscan.bank.errors import BankBusy, BankError, BankNotFound, DenseIndexError
from longscan.bank.search import first_stage
from longscan.cli import app
from longscan.documents import Document


def _docs(prefix: str, n: int) -> list[Document]:
    return [
        Document(f"{prefix}{i}", f"Report {prefix}{i}: the {prefix} ledger, page {i}, balances.")
        for i in range(n)
    ]


def _indexed_bank(path: Path, documents: list[Document]) -> MemoryBank:
    bank = MemoryBank(path)
    bank.add(documents)
    bank.sync(progress=False)
    return bank


def _output(result: object) -> str:
    """A CLI result's output with its line breaks undone (rich wraps long paths)."""
    return " ".join(result.output.split())  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ writers


def test_a_writer_saves_over_no_other_writers_dense_entries(tmp_path: Path) -> None:
    first, second = _docs("a", 3), _docs("b", 3)
    one, two = MemoryBank(tmp_path), MemoryBank(tmp_path)  # two processes' views of one bank
    assert len(one.indexes.dense()) == len(two.indexes.dense()) == 0  # both loaded, empty
    one.add(first)
    one.sync(progress=False)
    two.add(second)
    two.sync(progress=False)  # saves its in-memory index: it must first load one's entries
    assert_each_document_once(MemoryBank(tmp_path), first + second)
    assert len(one.indexes.dense()) == 6  # a reader sees what another process saved


def test_a_second_writer_waits_for_the_lock_or_gives_up_with_who_holds_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    holder = MemoryBank(tmp_path)
    impatient = MemoryBank(tmp_path, lock_timeout=0.5)
    with holder.writing(), pytest.raises(BankBusy, match=r"being written by pid \d+"):
        impatient.add(_docs("c", 1))
    assert "being written by" in caplog.text  # it said it was waiting before giving up
    assert impatient.add(_docs("c", 1))["added"] == 1  # free again once the holder is done


# ------------------------------------------------------------------------ check, repair


def test_check_finds_what_the_indexes_lack_and_repair_puts_it_back(tmp_path: Path) -> None:
    documents = _docs("d", 6)
    bank = _indexed_bank(tmp_path, documents)
    assert bank.check().ok
    lost, stray, orphan = bank.id_of("d2"), bank.id_of("d4"), bank.id_of("d5")
    with bank.writing():  # what a lost save leaves: rows flagged indexed, entries gone
        bank.indexes.dense().remove(lost)
        bank.indexes.save_dense()
        writer = bank.indexes.bm25().writer(heap_size=50_000_000, num_threads=1)
        writer.delete_documents_by_term("doc_id", stray)
        writer.commit()
        writer.wait_merging_threads()
    with sqlite3.connect(tmp_path / "bank.sqlite") as db:  # and an entry of a deleted row
        db.execute("DELETE FROM documents WHERE key = 'd5'")
    report = MemoryBank(tmp_path).check()
    assert not report.ok
    assert report.missing == {"bm25": [stray], "dense": [lost]}
    assert report.orphans == {"bm25": [orphan], "dense": [orphan]}
    result = CliRunner().invoke(app, ["bank", "check", "--bank", str(tmp_path)])
    assert result.exit_code == 1 and "bank repair" in _output(result)
    result = CliRunner().invoke(app, ["bank", "repair", "--bank", str(tmp_path)])
    assert result.exit_code == 0, result.output
    repaired = MemoryBank(tmp_path)
    assert repaired.check().ok
    assert_each_document_once(repaired, documents[:5])
    assert repaired.search_dense(documents[2].text, 1)[0][0] == lost


def test_repair_rebuilds_an_unreadable_dense_index(tmp_path: Path) -> None:
    documents = _docs("e", 4)
    _indexed_bank(tmp_path, documents)
    file = tmp_path / "dense.usearch"
    file.write_bytes(file.read_bytes()[:100])  # truncated
    report = MemoryBank(tmp_path).repair(progress=False)
    assert "dense.usearch" in report.unreadable
    assert_each_document_once(MemoryBank(tmp_path), documents)


# ------------------------------------------------------------------------------ remove


@pytest.mark.parametrize("rerun", ["remove again", "add again"])
def test_a_crash_inside_remove_is_repaired_by_running_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rerun: str
) -> None:
    documents = _docs("f", 4)
    bank = _indexed_bank(tmp_path, documents)
    unindex = MemoryBank._unindex

    def crashes_after_the_indexes(self: MemoryBank, ids: list[int]) -> None:
        unindex(self, ids)
        raise KeyboardInterrupt  # killed before the rows are deleted

    monkeypatch.setattr(MemoryBank, "_unindex", crashes_after_the_indexes)
    with pytest.raises(KeyboardInterrupt):
        bank.remove(["f1"])
    monkeypatch.undo()
    left = MemoryBank(tmp_path)
    assert left.stats()["not_indexed"] == 1  # honest: in the table, in no index, and said so
    if rerun == "remove again":
        assert left.remove(["f1"]) == 1
        assert_each_document_once(MemoryBank(tmp_path), [documents[0], *documents[2:]])
    else:
        left.add(documents)
        left.sync(progress=False)
        assert_each_document_once(MemoryBank(tmp_path), documents)
    assert MemoryBank(tmp_path).check().ok


def test_ids_are_never_reused_after_a_delete(tmp_path: Path) -> None:
    bank = MemoryBank(tmp_path)
    bank.add(_docs("g", 3))
    last = bank.id_of("g2")
    bank.remove(["g2"])
    bank.add([Document("new", "Another document.")])
    assert bank.id_of("new") == last + 1  # type: ignore[operator]
    assert bank.get([last]) == []  # type: ignore[list-item]  # an old id finds nothing


def test_an_old_bank_is_migrated_to_ids_never_reused(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "bank.sqlite") as db:  # the first banks' table
        db.executescript(
            """CREATE TABLE documents (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
                 source TEXT NOT NULL DEFAULT '', domain TEXT NOT NULL DEFAULT '',
                 tokens INTEGER NOT NULL, content_hash TEXT NOT NULL, text TEXT NOT NULL,
                 added REAL NOT NULL, indexed INTEGER NOT NULL DEFAULT 0);
               CREATE INDEX documents_domain ON documents(domain);
               INSERT INTO documents VALUES (1, 'h0', '', 'x', 2, 'h', 'Zero.', 0, 0);
               INSERT INTO documents VALUES (7, 'h1', '', 'x', 2, 'h', 'Seven.', 0, 0);"""
        )
    bank = MemoryBank(tmp_path)
    stored = [(d.id, d.key, d.text) for d in bank.get([1, 7])]
    assert stored == [(1, "h0", "Zero."), (7, "h1", "Seven.")]
    assert bank.stats()["domains"] == {"x": {"documents": 2, "tokens": 4}}
    bank.remove(["h1"])
    bank.add([Document("h2", "Two.")])
    assert bank.id_of("h2") == 8  # 7 is not given again
    assert MemoryBank(tmp_path).id_of("h2") == 8  # a second open migrates nothing twice


# -------------------------------------------------------------------- damaged, missing


def test_a_damaged_sqlite_file_is_named_with_its_repair(tmp_path: Path) -> None:
    bank = _indexed_bank(tmp_path, [Document(f"i{i}", f"ledger{i} " * 500) for i in range(20)])
    del bank
    data = bytearray((tmp_path / "bank.sqlite").read_bytes())
    data[4096:8192] = b"\xff" * 4096  # the documents table's root page
    (tmp_path / "bank.sqlite").write_bytes(bytes(data))
    for command in (
        ["bank", "stats"],
        ["bank", "search", "-q", "ledger3", "--first-stage", "--method", "bm25"],
    ):
        result = CliRunner().invoke(app, [*command, "--bank", str(tmp_path)])
        assert result.exit_code == 2, result.output
        output = _output(result)
        assert f"{tmp_path / 'bank.sqlite'} is damaged" in output and ".recover" in output
        assert "Traceback" not in output
    (tmp_path / "bank.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(BankError, match="bank.sqlite is damaged .file is not a database"):
        MemoryBank(tmp_path)


def test_an_unreadable_dense_index_is_named_and_hybrid_search_falls_back_to_bm25(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bank = _indexed_bank(tmp_path, _docs("j", 5))
    expected = first_stage(bank, "j3 ledger", 5, "bm25")
    file = tmp_path / "dense.usearch"
    file.write_bytes(file.read_bytes()[:64])
    bank = MemoryBank(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert first_stage(bank, "j3 ledger", 5, "hybrid") == expected
    assert "dense.usearch cannot be read" in caplog.text and "BM25 alone" in caplog.text
    with pytest.raises(DenseIndexError, match="bank repair"):
        bank.search_dense("j3 ledger", 5)
    command = ["bank", "search", "-q", "j3", "--first-stage", "--method", "dense"]
    result = CliRunner().invoke(app, [*command, "--bank", str(tmp_path)])
    assert result.exit_code == 2 and f"{file} cannot be read" in _output(result)
    assert "bank repair" in _output(result)


@pytest.mark.parametrize(
    "command",
    [["stats"], ["search", "-q", "anything", "--first-stage"], ["remove", "k"], ["check"]],
)
def test_only_add_creates_a_bank(tmp_path: Path, command: list[str]) -> None:
    typo = tmp_path / "bnak"
    result = CliRunner().invoke(app, ["bank", *command, "--bank", str(typo)])
    assert result.exit_code == 2 and "no memory bank in" in _output(result)
    assert not typo.exists()
    with pytest.raises(BankNotFound):
        MemoryBank(typo, create=False)


def test_check_fails_while_documents_wait_to_be_indexed(tmp_path: Path) -> None:
    """What a crashed repair leaves: every document stored, flagged not indexed, and both
    indexes empty. Searches would find nothing, so the bank is not ok."""
    bank = MemoryBank(tmp_path)
    bank.add(_docs("p", 3))
    report = bank.check()
    assert not report.ok
    assert report.entries == {"bm25": 0, "dense": 0}
    assert "3 of 3 documents are not indexed" in report.problems
    assert "the dense index holds 0 of 3 documents" in report.problems
    result = CliRunner().invoke(app, ["bank", "check", "--bank", str(tmp_path)])
    assert result.exit_code == 1
    assert "3 of 3 documents are not indexed" in _output(result)
    assert f"bank repair --bank {tmp_path}" in _output(result)
    bank.sync(progress=False)
    assert bank.check().ok and bank.check().problems == []


def test_removing_an_unknown_key_names_it_and_fails(tmp_path: Path) -> None:
    _indexed_bank(tmp_path, _docs("r", 2))
    result = CliRunner().invoke(app, ["bank", "remove", "r0", "r9", "--bank", str(tmp_path)])
    assert result.exit_code == 1
    assert '"unknown": [ "r9" ]' in _output(result) and "not in the bank: 'r9'" in _output(result)
    assert '"removed": 1' in _output(result)  # the known key is removed all the same
    assert_each_document_once(MemoryBank(tmp_path), _docs("r", 2)[1:])
