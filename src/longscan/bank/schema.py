"""The bank's SQLite file (``bank.sqlite``): its tables, the migrations that bring an older
bank's up to date, and a connection whose errors from a damaged file say which file, and
what repairs it (the documents are there alone: no index can rebuild them)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longscan.bank.errors import BankError

# 4: the file each document was read from; 3: a settings table (the encoder); 2: each
# document's places (PDF pages, heading paths); 1: ids never reused (AUTOINCREMENT); 0: the
# first banks, without it
SCHEMA_VERSION = 4
PLACES_VERSION = 2  # the first layout with places: older tables are copied, newer altered
TABLE = """
CREATE TABLE documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL DEFAULT '',
    domain TEXT NOT NULL DEFAULT '',
    tokens INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    text TEXT NOT NULL,
    added REAL NOT NULL,
    indexed INTEGER NOT NULL DEFAULT 0,
    places TEXT NOT NULL DEFAULT '[]',
    origin TEXT NOT NULL DEFAULT ''
)"""
ORIGIN_COLUMN = "ALTER TABLE documents ADD COLUMN origin TEXT NOT NULL DEFAULT ''"
DOMAIN_INDEX = "CREATE INDEX documents_domain ON documents(domain)"
# what a bank was built with (its encoder); banks from before it have no row: the packaged one
SETTINGS_TABLE = "CREATE TABLE IF NOT EXISTS bank_settings (key TEXT PRIMARY KEY, value TEXT)"
COLUMNS = "id, key, source, domain, tokens, content_hash, text, added, indexed"  # every version


def connect(file: Path) -> Connection:
    """``file`` opened, its tables created or migrated: every bank opens through here, so
    every query's damage error names the file."""
    db = sqlite3.connect(str(file), factory=Connection)
    db.file = file
    _create_or_migrate(db)
    return db


def _create_or_migrate(db: Connection) -> None:
    """Create the tables, or bring an older bank's up to ``SCHEMA_VERSION``, in one
    transaction (a second process waits, then finds it done).

    Version 3 had no ``origin`` column: its documents gain an empty one (the file is not
    known). Version 2 had no settings table: it gains an empty one (its encoder is the packaged
    one). Version 1 had no ``places`` column: its documents are copied with none (they were
    plain text). Version 0 had ``INTEGER PRIMARY KEY`` without ``AUTOINCREMENT``, so a
    deleted last id came back: the table is copied into one that never reuses an id. Ids
    deleted above the highest one left before the migration cannot be known, and may be
    given once more.
    """
    if db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:
            if version < PLACES_VERSION:
                _copy_documents(db)
            elif "origin" not in {row[1] for row in db.execute("PRAGMA table_info(documents)")}:
                db.execute(ORIGIN_COLUMN)
            db.execute(SETTINGS_TABLE)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _copy_documents(db: Connection) -> None:
    """The documents table in today's layout, with an old one's rows copied into it."""
    old = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'documents'"
    ).fetchone()
    if old is not None:
        db.execute("DROP INDEX IF EXISTS documents_domain")
        db.execute("ALTER TABLE documents RENAME TO documents_v0")
    db.execute(TABLE)
    if old is not None:
        db.execute(f"INSERT INTO documents ({COLUMNS}) SELECT {COLUMNS} FROM documents_v0")
        db.execute("DROP TABLE documents_v0")
    db.execute(DOMAIN_INDEX)


class _Cursor(sqlite3.Cursor):
    """A cursor whose errors from a damaged file say which file, and what repairs it."""

    def execute(self, *args: Any) -> Any:
        with _damage_named(self.connection):
            return super().execute(*args)

    def executemany(self, *args: Any) -> Any:
        with _damage_named(self.connection):
            return super().executemany(*args)

    def executescript(self, *args: Any) -> Any:
        with _damage_named(self.connection):
            return super().executescript(*args)

    def fetchone(self) -> Any:
        with _damage_named(self.connection):
            return super().fetchone()

    def fetchmany(self, *args: Any) -> Any:
        with _damage_named(self.connection):
            return super().fetchmany(*args)

    def fetchall(self) -> Any:
        with _damage_named(self.connection):
            return super().fetchall()

    def __next__(self) -> Any:
        with _damage_named(self.connection):
            return super().__next__()


class Connection(sqlite3.Connection):
    """A connection whose cursors are ``_Cursor``s."""

    file: Path = Path("bank.sqlite")

    def cursor(self, factory: Any = None) -> Any:  # type: ignore[override]
        return super().cursor(factory or _Cursor)

    def execute(self, *args: Any) -> Any:  # type: ignore[override]
        return self.cursor().execute(*args)

    def executemany(self, *args: Any) -> Any:  # type: ignore[override]
        return self.cursor().executemany(*args)

    def executescript(self, *args: Any) -> Any:  # type: ignore[override]
        return self.cursor().executescript(*args)

    def commit(self) -> None:
        with _damage_named(self):
            super().commit()


@contextlib.contextmanager
def _damage_named(connection: Any) -> Iterator[None]:
    try:
        yield
    except sqlite3.DatabaseError as error:
        name = getattr(error, "sqlite_errorname", "")
        if name not in ("SQLITE_CORRUPT", "SQLITE_NOTADB") and type(error) is not (
            sqlite3.DatabaseError
        ):
            raise
        file = getattr(connection, "file", "bank.sqlite")
        raise BankError(
            f"{file} is damaged ({error}). It holds the documents themselves, so no index can "
            f"rebuild it: restore it from a backup, or save what is readable with "
            f"`sqlite3 {file} .recover | sqlite3 recovered.sqlite`, put that in its place and "
            f"run `longscan bank repair --bank {Path(file).parent}`; or move the folder away "
            "and add the documents again"
        ) from None
