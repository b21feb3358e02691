"""A persistent memory bank: documents with stable integer ids, and their indexes beside them.

* Documents live in SQLite (``bank.sqlite``): transactional add/update/delete, a restart
  loses nothing, and texts are read one document at a time, so no step holds the corpus in
  memory. SQLite needs no server and ships with Python; the access pattern is row-wise
  (fetch the candidates' texts), which suits it better than a columnar store.
* BM25 over whole documents is a tantivy index (``bm25/``): it adds and deletes documents
  incrementally, where a bm25s index would need a full rebuild.
* Dense vectors are a usearch index (``dense.usearch``, cosine): keys are the document ids,
  so updates and deletes touch one entry. A document's vector is MiniLM's embedding of its
  first window (title and opening, up to 256 tokens): one vector per document keeps
  ingestion of millions of documents linear and cheap.
* The scanner's sentence vectors are cached per document content (``vectors/``), so the
  second stage reads a candidate's text without re-encoding it.

Ingestion is idempotent per ``(key, content hash)``: re-adding an unchanged document is a
no-op, so an interrupted ``add`` is resumed by running it again, with no duplicates.

One process writes at a time: every write holds the bank's lock file (``write.lock``, an
``flock`` the kernel releases when its holder dies, however it dies), and a writer that
finds it taken waits. usearch keeps the whole dense index in memory and saves it whole, so
two writers would each save their own over the other's; under the lock, a writer first
reloads what another process saved. ``check`` compares the table with both indexes, and
``repair`` re-indexes what they disagree on. Ids are never reused (``AUTOINCREMENT``): a
client holding the id of a deleted document never gets another document.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from longscan.bank.dense import usearch_index
from longscan.documents import Document, Place, places_from_json, places_to_json
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.external import PACKAGED, canonical_encoder, encoder_dim
from longscan.readers.files import STDIN

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
# ``Document.metadata[ORIGIN]``: the file a document was read from (``bank add`` sets it). A
# document of a stored key from another file replaces the stored one: that is said first.
ORIGIN = "origin"
DOMAIN_INDEX = "CREATE INDEX documents_domain ON documents(domain)"
# what a bank was built with (its encoder); banks from before it have no row: the packaged one
SETTINGS_TABLE = "CREATE TABLE IF NOT EXISTS bank_settings (key TEXT PRIMARY KEY, value TEXT)"
COLUMNS = "id, key, source, domain, tokens, content_hash, text, added, indexed"  # every version
DENSE_WINDOW_TOKENS = 256
LOCK_POLL_SECONDS = 0.2
logger = logging.getLogger(__name__)


class BankError(RuntimeError):
    """A bank that cannot be used as it is: missing, damaged or busy. The message names the
    file and what repairs it."""


class BankNotFound(BankError):
    """No bank in the folder, and the caller may not create one."""


class BankBusy(BankError):
    """Another process holds the bank's writer lock longer than the caller would wait."""


class DenseIndexError(BankError):
    """``dense.usearch`` cannot be read; ``MemoryBank.repair`` rebuilds it."""


class BM25IndexError(BankError):
    """The ``bm25/`` index cannot be opened; ``MemoryBank.repair`` rebuilds it."""


@dataclass(frozen=True)
class BankDocument:
    id: int
    key: str
    source: str
    domain: str
    tokens: int
    text: str
    places: tuple[Place, ...] = ()

    def as_document(self) -> Document:
        metadata = {"key": self.key, "domain": self.domain}
        return Document(str(self.id), self.text, metadata=metadata, places=self.places)


@dataclass(frozen=True)
class DocumentInfo:
    """What a catalog lists of a bank document: everything but its text."""

    id: int
    key: str
    chars: int
    tokens: int


@dataclass(frozen=True)
class Change:
    """A document to write: new, or an update of the stored one with the same key;
    ``replaces`` names the other file that one was read from, if it was."""

    document: Document
    digest: str
    update: bool
    replaces: str = ""

    @property
    def origin(self) -> str:
        return origin_of(self.document)

    @property
    def outcome(self) -> str:
        """``added``, ``updated`` (the same file, or one not known) or ``replaced``."""
        return "replaced" if self.replaces else "updated" if self.update else "added"


def groups(
    items: Iterable[Document], size: int, chars: float = float("inf")
) -> Iterator[list[Document]]:
    """Consecutive documents, at most ``size`` of them or about ``chars`` characters."""
    group: list[Document] = []
    total = 0
    for item in items:
        group.append(item)
        total += len(item.text)
        if len(group) >= size or total >= chars:
            yield group
            group, total = [], 0
    if group:
        yield group


@dataclass
class CheckReport:
    """Where the table and the indexes disagree (ids), from ``MemoryBank.check``.

    ``pending``: documents not indexed yet (an interrupted ``add`` or ``repair`` leaves
    them; ``repair`` indexes them); ``missing``: flagged indexed in the table, absent from
    the index; ``orphans``: in the index, not in the table; ``duplicates``: more than once in
    the BM25 index; ``unreadable``: index files that cannot be read (all their documents are
    missing); ``entries``: the documents each readable index holds. A bank is ``ok`` only
    when every document is in both indexes, once: searches see the whole bank.
    """

    documents: int = 0
    pending: int = 0
    missing: dict[str, list[int]] = field(default_factory=dict)
    orphans: dict[str, list[int]] = field(default_factory=dict)
    duplicates: list[int] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why
    entries: dict[str, int] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """What keeps the bank from being whole, one line each; none when it is."""
        found = [f"{file} cannot be read" for file in self.unreadable]
        if self.pending:
            found.append(f"{self.pending} of {self.documents} documents are not indexed")
        for name, count in self.entries.items():
            if count < self.documents:
                found.append(f"the {name} index holds {count} of {self.documents} documents")
        for name, ids in self.missing.items():
            if ids:
                found.append(f"{len(ids)} documents flagged indexed are not in the {name} index")
        for name, ids in self.orphans.items():
            if ids:
                found.append(f"the {name} index holds {len(ids)} deleted documents")
        if self.duplicates:
            found.append(f"{len(self.duplicates)} documents are in the bm25 index more than once")
        return found

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "documents": self.documents,
            "pending": self.pending,
            "entries": self.entries,
            "missing": self.missing,
            "orphans": self.orphans,
            "duplicates": self.duplicates,
            "unreadable": self.unreadable,
        }


def origin_of(document: Document) -> str:
    """The file ``document`` was read from, as recorded in the bank ("" when not known)."""
    return str(document.metadata.get(ORIGIN, ""))


def from_files(documents: Iterable[Document], prefix: str = "") -> Iterator[Document]:
    """Documents read from files (``iter_paths``) as the bank keeps them: each key after
    ``prefix``, each with the file it was read from (``ORIGIN``), so that a document of a
    stored key from another file is known to replace the stored one."""
    for document in documents:
        path = str(document.metadata.get("path", ""))
        origin = str(Path(path).resolve()) if path not in ("", STDIN) else ""
        metadata = {**document.metadata, ORIGIN: origin}
        yield replace(document, id=prefix + document.id, metadata=metadata)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_digest(document: Document) -> str:
    """What says a stored document changed: its text's hash, with its places when it has
    any (the same text re-extracted with other page breaks must replace the old pages)."""
    if not document.places:
        return content_hash(document.text)
    return content_hash(document.text + "\x00" + places_to_json(document.places))


class MemoryBank:
    """Documents and their BM25 and dense indexes in one folder.

    Changes are written to SQLite first and flagged ``indexed = 0``; ``sync`` brings the
    indexes up to date, so a crash between the two is repaired by the next ``sync``.

    Args:
        path: The bank's folder.
        create: Create the bank if the folder holds none; otherwise raise ``BankNotFound``.
        lock_timeout: Seconds a write waits for another process's writer lock before
            ``BankBusy``; ``None`` waits as long as it takes.
        encoder: The sentence-transformers model (name or folder) whose vectors the dense
            index holds: recorded when the bank is created, and refused when it differs from
            the one recorded (vectors of two models cannot share an index). ``None`` takes the
            recorded one, or the packaged MiniLM for a new bank.

    Raises:
        BankError: ``encoder`` is not the encoder the bank was built with.
    """

    def __init__(
        self,
        path: Path,
        create: bool = True,
        lock_timeout: float | None = None,
        encoder: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.file = self.path / "bank.sqlite"
        if not create and not self.file.is_file():
            raise BankNotFound(
                f"no memory bank in {self.path} (no bank.sqlite there); "
                f"`longscan bank add FILES --bank {self.path}` creates one"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock_timeout = lock_timeout
        self._lock_file: Any = None
        self._lock_depth = 0
        self.db = sqlite3.connect(str(self.file), factory=_Connection)
        self.db.file = self.file
        _create_or_migrate(self.db)
        self.encoder = self._settle_encoder(encoder)
        self.dim = int(self._setting("encoder_dim") or encoder_dim(self.encoder))
        self._bm25: Any = None
        self._dense: Any = None
        self._dense_stamp: tuple[int, ...] | None = None  # the file the index in memory is
        self._dense_dirty = False  # changed in memory since loaded or saved

    def _setting(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM bank_settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _settle_encoder(self, asked: str | None) -> str:
        """The bank's encoder: the recorded one; or, for a bank without documents, the one
        asked for, recorded in one transaction with its vectors' length."""
        recorded = self._setting("encoder")
        asked = None if asked is None else canonical_encoder(asked)
        if recorded is None and asked not in (None, PACKAGED):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                recorded = self._setting("encoder")
                empty = self.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 0
                if recorded is None and empty:
                    self.db.executemany(
                        "INSERT INTO bank_settings (key, value) VALUES (?, ?)",
                        [("encoder", asked), ("encoder_dim", str(encoder_dim(asked)))],
                    )
                    recorded = asked
                self.db.commit()
            except BaseException:
                self.db.rollback()
                raise
        built_with = recorded or PACKAGED
        if asked is not None and asked != built_with:
            raise BankError(
                f"the bank in {self.path} holds vectors of the encoder {built_with!r}, not "
                f"{asked!r}: search it with its own encoder (leave --encoder out), or put the "
                "documents in a new bank"
            )
        return built_with

    # -------------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the bank's writer lock for the block (re-entrant): every write runs inside.

        Another process's writer makes this one wait (with a message), up to
        ``lock_timeout``. The lock is an ``flock`` on ``write.lock``, so a killed holder
        never leaves it taken.
        """
        if self._lock_depth == 0:
            self._acquire()
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0:
                self._release()

    def _acquire(self) -> None:
        file = open(self.path / "write.lock", "a+")  # noqa: SIM115  # held until _release
        started = time.monotonic()
        warned = False
        while True:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                file.seek(0)
                holder = file.read().strip() or "another process"
                waited = time.monotonic() - started
                if self.lock_timeout is not None and waited >= self.lock_timeout:
                    file.close()
                    raise BankBusy(
                        f"the bank in {self.path} is being written by {holder}; "
                        f"gave up after {waited:.0f} s (one writer at a time: try again "
                        "when it has finished)"
                    ) from None
                if not warned:
                    logger.warning(
                        "the bank in %s is being written by %s; waiting for it to finish",
                        self.path,
                        holder,
                    )
                    warned = True
                time.sleep(LOCK_POLL_SECONDS)
        file.seek(0)
        file.truncate()
        file.write(f"pid {os.getpid()} ({' '.join(sys.argv)[:200]})")
        file.flush()
        self._lock_file = file
        if self._dense_dirty:  # an earlier write failed before saving: its rows are unflagged
            self._dense, self._dense_dirty = None, False

    def _release(self) -> None:
        file, self._lock_file = self._lock_file, None
        file.seek(0)
        file.truncate()
        file.close()  # closing releases the flock

    # ----------------------------------------------------------------------- documents

    def add(
        self, documents: Iterable[Document], source: str = "", domain: str = "", batch: int = 256
    ) -> dict[str, int]:
        """Add or update documents by key (``Document.id``); returns counts of what happened
        (``replaced``: updated from another file than the stored one, see ``triage``).

        Unchanged documents are skipped, so running the same ``add`` twice (or again after an
        interruption) neither loses nor duplicates anything.
        """
        from longscan.answering.tokens import count_tokens

        counts = {"added": 0, "updated": 0, "replaced": 0, "unchanged": 0}
        for group in groups(documents, batch):
            changes, unchanged = self.triage(group)
            counts["unchanged"] += unchanged
            for change in changes:
                counts[change.outcome] += 1
            self.upsert(
                [
                    (c.document.id, source, domain, count_tokens(c.document.text), c.digest,
                     c.document.text, places_to_json(c.document.places), c.origin)
                    for c in changes
                ]
            )  # fmt: skip
        return counts

    def triage(self, documents: Sequence[Document]) -> tuple[list[Change], int]:
        """The new or changed documents among ``documents`` (of equal keys the last wins),
        and how many are stored unchanged: what ``add`` and ingestion write, and skip.

        A changed document read from another file than the stored one (both files known,
        ``ORIGIN``) replaces a document, not a version of it: a warning names both files
        before anything is written.
        """
        latest = list({document.id: document for document in documents}.values())
        stored = {
            key: (digest, origin)
            for key, digest, origin in self._rows_where(
                "key, content_hash, origin", "key", [document.id for document in latest]
            )
        }
        changes = []
        for document in latest:
            digest = document_digest(document)
            known_digest, known_origin = stored.get(document.id, (None, ""))
            if known_digest == digest:
                continue
            origin = origin_of(document)
            replaces = known_origin if origin and known_origin not in ("", origin) else ""
            if replaces:
                logger.warning(
                    "%s from %s replaces the document of that key from %s in the bank %s "
                    "(`longscan bank add --prefix` keeps both, under different keys)",
                    document.id,
                    origin,
                    replaces,
                    self.path,
                )
            changes.append(Change(document, digest, known_digest is not None, replaces))
        return changes, len(latest) - len(changes)

    def upsert(self, rows: Sequence[tuple[Any, ...]]) -> list[int]:
        """Upsert ``(key, source, domain, tokens, digest, text, places JSON, origin)`` rows,
        not yet indexed; returns their ids (an update keeps its id)."""
        with self.writing(), self.db:  # one transaction per batch: a batch is in, or it is not
            for key, source, domain, tokens, digest, text, places, origin in rows:
                self.db.execute(
                    """INSERT INTO documents
                         (key, source, domain, tokens, content_hash, text, added, indexed,
                          places, origin)
                       VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                       ON CONFLICT(key) DO UPDATE SET source = excluded.source,
                         domain = excluded.domain, tokens = excluded.tokens,
                         content_hash = excluded.content_hash, text = excluded.text,
                         places = excluded.places, origin = excluded.origin, indexed = 0""",
                    (key, source, domain, tokens, digest, text, time.time(), places, origin),
                )  # fmt: skip
        return [int(self.id_of(row[0])) for row in rows]  # type: ignore[arg-type]

    def known(self, keys: Sequence[str]) -> dict[str, str]:
        """``key -> content hash`` for the keys already in the bank."""
        return dict(self._rows_where("key, content_hash", "key", keys))  # type: ignore[arg-type]

    def _rows_where(
        self, columns: str, column: str, values: Sequence[Any]
    ) -> Iterator[tuple[Any, ...]]:
        """``SELECT columns WHERE column IN values``, in chunks under SQLite's variable limit."""
        for first in range(0, len(values), 500):
            part = list(values[first : first + 500])
            marks = ",".join("?" * len(part))
            yield from self.db.execute(
                f"SELECT {columns} FROM documents WHERE {column} IN ({marks})", part
            )

    def sentence_cache(self) -> EmbeddingCache:
        """The scanner's per-document sentence vectors, kept beside the bank (``vectors/``)."""
        return EmbeddingCache(self.path / "vectors")

    def remove(self, keys: Iterable[str]) -> int:
        """Delete documents by key, from the table and from both indexes.

        The rows are flagged not indexed first, then taken out of the indexes, then deleted:
        a crash in between leaves documents that are honestly not indexed, which running the
        ``remove`` again deletes, and a ``sync`` (or adding them again) puts back whole.
        """
        with self.writing():
            ids = [doc_id for doc_id in map(self.id_of, keys) if doc_id is not None]
            if ids:
                self._flag(ids, indexed=False)
                self._unindex(ids)
                with self.db:
                    self.db.executemany("DELETE FROM documents WHERE id = ?", [(i,) for i in ids])
        return len(ids)

    def _flag(self, ids: Sequence[int], indexed: bool) -> None:
        with self.db:
            self.db.executemany(
                "UPDATE documents SET indexed = ? WHERE id = ?", [(int(indexed), i) for i in ids]
            )

    def get(self, ids: Sequence[int]) -> list[BankDocument]:
        """Documents by id, in the order asked (missing ids are left out)."""
        found = {
            row[0]: BankDocument(*row[:-1], places=places_from_json(row[-1]))
            for row in self._rows_where("id, key, source, domain, tokens, text, places", "id", ids)
        }
        return [found[i] for i in ids if i in found]

    def catalog(self, ids: Sequence[int] | None = None) -> list[DocumentInfo]:
        """Every document (or those of ``ids`` that exist) oldest first, without its text."""
        columns = "id, key, length(text), tokens"
        rows = (
            self.db.execute(f"SELECT {columns} FROM documents ORDER BY id")
            if ids is None
            else sorted(self._rows_where(columns, "id", ids))
        )
        return [DocumentInfo(int(i), key, int(n), int(tokens)) for i, key, n, tokens in rows]

    def id_of(self, key: str) -> int | None:
        row = self.db.execute("SELECT id FROM documents WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        """Documents and tokens per domain, what is not indexed yet, and how many entries each
        index holds (``check`` says which ids disagree)."""
        rows = self.db.execute(
            "SELECT domain, COUNT(*), SUM(tokens), SUM(indexed = 0) FROM documents GROUP BY domain"
        ).fetchall()
        return {
            "documents": sum(r[1] for r in rows),
            "tokens": int(sum(r[2] or 0 for r in rows)),
            "not_indexed": int(sum(r[3] or 0 for r in rows)),
            "domains": {r[0] or "-": {"documents": r[1], "tokens": int(r[2] or 0)} for r in rows},
            "index_entries": self._index_entries(),
            "encoder": self.encoder,
            "path": str(self.path),
        }

    def _index_entries(self) -> dict[str, int | str]:
        entries: dict[str, int | str] = {}
        try:
            index = self._bm25_index()
            index.reload()
            entries["bm25"] = int(index.searcher().num_docs)
        except BM25IndexError:
            entries["bm25"] = "unreadable: run `longscan bank repair`"
        try:
            entries["dense"] = len(self._dense_index())
        except DenseIndexError:
            entries["dense"] = "unreadable: run `longscan bank repair`"
        return entries

    # ------------------------------------------------------------------------- indexes

    def _bm25_index(self) -> Any:
        if self._bm25 is None:
            import tantivy

            builder = tantivy.SchemaBuilder()
            builder.add_integer_field("doc_id", stored=True, indexed=True, fast=True)
            builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
            folder = self.path / "bm25"
            folder.mkdir(exist_ok=True)
            try:
                self._bm25 = tantivy.Index(builder.build(), path=str(folder))
            except ValueError as error:
                raise BM25IndexError(
                    f"the BM25 index {folder} cannot be opened ({error}); "
                    f"`longscan bank repair --bank {self.path}` rebuilds it from the documents"
                ) from None
        return self._bm25

    def _dense_index(self) -> Any:
        """The dense index, reloaded when another process has saved a newer file (writers
        hold the lock, so that happens before a write, or between searches)."""
        file = self.path / "dense.usearch"
        stamp = _stamp(file)
        if self._dense is None or (stamp != self._dense_stamp and not self._dense_dirty):
            Index = usearch_index()  # noqa: N806  # a class
            if stamp is None:
                self._dense = Index(ndim=self.dim, metric="cos", dtype="f32")
            else:
                try:
                    self._dense = Index.restore(str(file), view=False)
                except (RuntimeError, ValueError) as error:
                    self._dense = None
                    raise DenseIndexError(
                        f"the dense index {file} cannot be read ({error}); "
                        f"`longscan bank repair --bank {self.path}` rebuilds it from the "
                        "documents"
                    ) from None
                if self._dense is None or self._dense.ndim != self.dim:
                    self._dense = None
                    raise DenseIndexError(
                        f"the dense index {file} is not a {self.dim}-dimension usearch "
                        f"index; `longscan bank repair --bank {self.path}` rebuilds it"
                    )
            self._dense_stamp = stamp
        return self._dense

    def _unindex(self, ids: Sequence[int]) -> None:
        with self.writing():
            writer = self._bm25_index().writer(heap_size=50_000_000, num_threads=1)
            self._forget(writer, ids)
            writer.commit()
            writer.wait_merging_threads()
            self._save_dense()

    def _save_dense(self) -> None:
        """Write the dense index beside the old file, then swap: a crash mid-write never
        leaves an unreadable index. Only the writer-lock holder saves."""
        if self._lock_depth == 0:
            raise RuntimeError("the dense index is saved only under the writer lock")
        file = self.path / "dense.usearch"
        partial = file.with_suffix(".usearch.partial")
        self._dense_index().save(str(partial))
        partial.replace(file)
        self._dense_stamp, self._dense_dirty = _stamp(file), False

    def _forget(self, writer: Any, ids: Sequence[int]) -> None:
        """Delete ``ids`` from the BM25 writer's next commit and from the dense index."""
        for doc_id in ids:
            writer.delete_documents_by_term("doc_id", doc_id)
        dense = self._dense_index()
        for doc_id in ids:
            if doc_id in dense:
                dense.remove(doc_id)
                self._dense_dirty = True

    def pending(self, batch: int = 256) -> Iterator[list[tuple[int, str]]]:
        """Batches of ``(id, text)`` not yet in the indexes, read lazily from SQLite."""
        last = 0
        while True:
            rows = self.db.execute(
                "SELECT id, text FROM documents WHERE indexed = 0 AND id > ? ORDER BY id LIMIT ?",
                (last, batch),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(int(i), t) for i, t in rows]

    def index_batch(
        self, rows: Sequence[tuple[int, str]], vectors: np.ndarray, mark: bool = True
    ) -> None:
        """Put one batch in both indexes, replacing older entries (in one BM25 commit: tantivy
        applies a delete only to documents added before it).

        With ``mark``, also save the dense index and flag the rows indexed. Ingestion passes
        ``mark=False`` and calls ``mark_indexed`` for many batches at once, because saving
        writes the whole dense index: once per batch, time would grow with the bank squared.
        """
        import tantivy

        ids = [doc_id for doc_id, _ in rows]
        with self.writing():
            writer = self._bm25_index().writer(heap_size=100_000_000, num_threads=1)
            self._forget(writer, ids)
            for doc_id, text in rows:
                writer.add_document(tantivy.Document(doc_id=doc_id, body=text))
            writer.commit()
            writer.wait_merging_threads()
            dense = self._dense_index()
            self._dense_dirty = True
            dense.add(np.asarray(ids, dtype=np.uint64), vectors.astype(np.float32))
            if mark:
                self.mark_indexed(ids)

    def mark_indexed(self, ids: Sequence[int]) -> None:
        """Save the dense index, then flag ``ids`` indexed: a crash between the two leaves rows
        to index again (``index_batch`` replaces), never a flag without its vector."""
        with self.writing():
            self._save_dense()
            self._flag(ids, indexed=True)

    def unindexed(self) -> int:
        """How many documents are not in the indexes yet (``sync`` puts them there)."""
        return int(
            self.db.execute("SELECT COUNT(*) FROM documents WHERE indexed = 0").fetchone()[0]
        )

    def sync(self, batch: int = 256, progress: bool = True) -> int:
        """Index every document not yet indexed; returns how many were indexed."""
        from longscan.progress import Bar

        with self.writing():
            total = self.unindexed()
            done = 0
            with Bar("indexing", total=total, enabled=progress and bool(total)) as bar:
                for rows in self.pending(batch):
                    self.index_batch(rows, embed_openings([t for _, t in rows], self.encoder))
                    done += len(rows)
                    bar.advance(len(rows))
        self.reload()
        return done

    # ------------------------------------------------------------------ check, repair

    def check(self) -> CheckReport:
        """Compare the table with the BM25 and dense indexes, id by id (reads every id of
        the three: seconds per million documents)."""
        report = CheckReport()
        table = dict(self.db.execute("SELECT id, indexed FROM documents").fetchall())
        report.documents = len(table)
        report.pending = sum(1 for flag in table.values() if not flag)
        indexed = {doc_id for doc_id, flag in table.items() if flag}
        entries: dict[str, Counter[int]] = {}
        try:
            entries["bm25"] = self._bm25_ids()
        except BM25IndexError as error:
            report.unreadable["bm25"] = str(error)
        try:
            entries["dense"] = Counter(int(key) for key in self._dense_index().keys)
        except DenseIndexError as error:
            report.unreadable["dense.usearch"] = str(error)
        for name in ("bm25", "dense"):
            found = entries.get(name, Counter())
            if name in entries:
                report.entries[name] = len(set(found) & set(table))
            report.missing[name] = sorted(indexed - set(found))
            report.orphans[name] = sorted(set(found) - set(table))
        report.duplicates = sorted(i for i, n in entries.get("bm25", Counter()).items() if n > 1)
        return report

    def _bm25_ids(self) -> Counter[int]:
        """How many times each document id is in the BM25 index."""
        import tantivy

        index = self._bm25_index()
        index.reload()
        searcher = index.searcher()
        if searcher.num_docs == 0:
            return Counter()
        hits = searcher.search(tantivy.Query.all_query(), searcher.num_docs).hits
        return Counter(searcher.fast_field_values("doc_id", [address for _, address in hits]))

    def repair(self, progress: bool = True) -> CheckReport:
        """Make both indexes agree with the table: rebuild an unreadable index, drop entries
        of deleted documents, and index again every document missing from an index (with
        those never indexed). Returns what ``check`` found before."""
        with self.writing():
            report = self.check()
            if "bm25" in report.unreadable:
                self._bm25 = None
                shutil.rmtree(self.path / "bm25")  # derived from the table: rebuilt below
            if "dense.usearch" in report.unreadable:
                (self.path / "dense.usearch").unlink()
                self._dense = None
            orphans = sorted({i for ids in report.orphans.values() for i in ids})
            if orphans:
                self._unindex(orphans)
            redo = {i for ids in report.missing.values() for i in ids} | set(report.duplicates)
            self._flag(sorted(redo), indexed=False)
            self.sync(progress=progress)
        return report

    def reload(self) -> None:
        """Let searches see what the last commits added to the BM25 index."""
        if self._bm25 is not None:
            self._bm25.reload()

    # -------------------------------------------------------------------------- search

    def search_bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        index = self._bm25_index()
        index.reload()
        searcher = index.searcher()
        if searcher.num_docs == 0:
            return []
        parsed = index.parse_query(_escape(query), ["body"])
        return [
            (int(searcher.doc(a)["doc_id"][0]), float(score))
            for score, a in searcher.search(parsed, k).hits
        ]

    def search_dense(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the ``k`` nearest documents; ``DenseIndexError`` when the index
        file cannot be read."""
        dense = self._dense_index()
        if len(dense) == 0:
            return []
        from longscan.encoders.external import load_text_encoder

        query_vectors = load_text_encoder(self.encoder).encode([query])
        vector = np.asarray(query_vectors, dtype=np.float32)[0]
        matches = dense.search(vector, min(k, len(dense)))
        return [
            (int(key), 1.0 - float(distance))
            for key, distance in zip(matches.keys, matches.distances, strict=True)
        ]


def _stamp(file: Path) -> tuple[int, ...] | None:
    """What tells one saved file from the next (a save replaces the file: a new inode)."""
    try:
        status = file.stat()
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_mtime_ns, status.st_size)


def _create_or_migrate(db: _Connection) -> None:
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


def _copy_documents(db: _Connection) -> None:
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


class _Connection(sqlite3.Connection):
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


def embed_openings(texts: Sequence[str], encoder: str = PACKAGED) -> np.ndarray:
    """``(len(texts), dim)``: one vector per document, its first window (MiniLM truncates at
    256 tokens), by the encoder ``encoder`` names."""
    from longscan.encoders.external import load_text_encoder

    heads = [text[: DENSE_WINDOW_TOKENS * 8] for text in texts]  # cheap cut before tokenising
    return np.asarray(load_text_encoder(encoder).encode(heads), dtype=np.float32)


def _escape(query: str) -> str:
    """A free-text query for tantivy's parser: its syntax characters become spaces, and words
    are lower-cased, so ``IN``, ``AND``, ``OR`` and ``NOT`` are words, not operators (the
    index lower-cases anyway)."""
    cleaned = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in query.lower())
    return " ".join(cleaned.split()) or "_"
