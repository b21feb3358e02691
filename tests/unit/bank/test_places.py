"""A bank keeps each document's pages and headings, so its evidence cites them like `ask`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from longscan.bank import MemoryBank
from longscan.cli import app
from longscan.documents import Document, Place

REPORT = (
    "The board met in March to review the annual budget.\n\n"
    "Net revenue rose to 4.2 million dollars, driven by licence sales in Europe.\n\n"
    "The company hired twelve engineers for the new office in Lisbon."
)


def report(places: tuple[Place, ...]) -> Document:
    return Document("report.pdf", REPORT, places=places)


def test_search_evidence_cites_the_stored_page(tmp_path: Path) -> None:
    second = REPORT.index("Net revenue")
    bank = MemoryBank(tmp_path / "bank")
    bank.add([report((Place(0, 1), Place(second, 2, ("Results",))))])
    bank.sync(progress=False)
    del bank
    result = CliRunner().invoke(
        app, ["bank", "search", "-q", "How much was net revenue?", "--bank",
              str(tmp_path / "bank"), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    evidence = json.loads(result.stdout)[0]["evidence"]
    top = next(e for e in evidence if "Net revenue" in e["text"])
    assert (top["page"], top["section"]) == (2, ["Results"])
    first = next(e for e in evidence if "board met" in e["text"])
    assert (first["page"], first["section"]) == (1, [])


def test_new_page_breaks_for_the_same_text_replace_the_old(tmp_path: Path) -> None:
    bank = MemoryBank(tmp_path)
    assert bank.add([report((Place(0, 1),))])["added"] == 1
    assert bank.add([report((Place(0, 1),))])["unchanged"] == 1
    moved = (Place(0, 3),)
    assert bank.add([report(moved)])["updated"] == 1
    (stored,) = bank.get([bank.id_of("report.pdf")])
    assert stored.as_document().places == moved


def test_a_version_1_bank_gains_places_and_keeps_its_documents(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "bank.sqlite") as db:  # the table before places
        db.executescript(
            """CREATE TABLE documents (id INTEGER PRIMARY KEY AUTOINCREMENT,
                 key TEXT NOT NULL UNIQUE, source TEXT NOT NULL DEFAULT '',
                 domain TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL,
                 content_hash TEXT NOT NULL, text TEXT NOT NULL, added REAL NOT NULL,
                 indexed INTEGER NOT NULL DEFAULT 0);
               CREATE INDEX documents_domain ON documents(domain);
               INSERT INTO documents VALUES (3, 'a', '', 'x', 2, 'h', 'Three.', 0, 1);
               PRAGMA user_version = 1;"""
        )
    bank = MemoryBank(tmp_path)
    (stored,) = bank.get([3])
    assert (stored.key, stored.text, stored.places) == ("a", "Three.", ())
    bank.add([report((Place(0, 5),))])
    assert bank.get([bank.id_of("report.pdf")])[0].places == (Place(0, 5),)
