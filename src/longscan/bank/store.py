"""A persistent memory bank: documents with stable integer ids, and their indexes beside them.

* Documents live in SQLite (``bank.sqlite``, ``longscan.bank.schema``): transactional
  add/update/delete, a restart loses nothing, and texts are read one document at a time, so
  no step holds the corpus in memory. SQLite needs no server and ships with Python; the
  access pattern is row-wise (fetch the candidates' texts), which suits it better than a
  columnar store.
* BM25 (``bm25/``) and dense (``dense.usearch``) indexes over them: ``longscan.bank.indexes``.
* The scanner's sentence vectors are cached per document content (``vectors/``), so the
  second stage reads a candidate's text without re-encoding it.

Ingestion is idempotent per ``(key, content hash)``: re-adding an unchanged document is a
no-op, so an interrupted ``add`` is resumed by running it again, with no duplicates.

One process writes at a time: every write holds the bank's writer lock
(``longscan.bank.lock``), and a writer that finds it taken waits. ``check`` compares the
table with both indexes, and ``repair`` re-indexes what they disagree on
(``longscan.bank.integrity``). Ids are never reused (``AUTOINCREMENT``): a client holding the
id of a deleted document never gets another document.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from longscan.bank import integrity
from longscan.bank.errors import BankError, BankNotFound
from longscan.bank.indexes import Indexes, embed_openings
from longscan.bank.integrity import CheckReport
from longscan.bank.lock import WriterLock
from longscan.bank.records import (
    BankDocument,
    Change,
    DocumentInfo,
    document_digest,
    groups,
    origin_of,
)
from longscan.bank.schema import connect
from longscan.documents import Document, places_from_json, places_to_json
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.external import PACKAGED, canonical_encoder, encoder_dim

logger = logging.getLogger(__name__)


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
        self._lock = WriterLock(self.path)
        self.db = connect(self.file)
        self.encoder = self._settle_encoder(encoder)
        self.dim = int(self._setting("encoder_dim") or encoder_dim(self.encoder))
        self.indexes = Indexes(self.path, self.dim, self._lock)

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
        first = not self._lock.held
        with self._lock.hold(self.lock_timeout):
            if first:  # an earlier write may have failed before saving: its rows are unflagged
                self.indexes.discard_unsaved()
            yield

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
            "index_entries": self.indexes.entries(),
            "encoder": self.encoder,
            "path": str(self.path),
        }

    # ------------------------------------------------------------------------- indexes

    def _unindex(self, ids: Sequence[int]) -> None:
        """Take ``ids`` out of both indexes (``remove``, and ``repair`` of orphans)."""
        with self.writing():
            self.indexes.delete(ids)

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
        with self.writing():
            self.indexes.put(rows, vectors)
            if mark:
                self.mark_indexed([doc_id for doc_id, _ in rows])

    def mark_indexed(self, ids: Sequence[int]) -> None:
        """Save the dense index, then flag ``ids`` indexed: a crash between the two leaves rows
        to index again (``index_batch`` replaces), never a flag without its vector."""
        with self.writing():
            self.indexes.save_dense()
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

    def reload(self) -> None:
        """Let searches see what the last commits added to the BM25 index."""
        self.indexes.reload()

    # ------------------------------------------------------------------ check, repair

    def check(self) -> CheckReport:
        """Compare the table with the BM25 and dense indexes, id by id (reads every id of
        the three: seconds per million documents)."""
        return integrity.check(self)

    def repair(self, progress: bool = True) -> CheckReport:
        """Make both indexes agree with the table: rebuild an unreadable index, drop entries
        of deleted documents, and index again every document missing from an index (with
        those never indexed). Returns what ``check`` found before."""
        return integrity.repair(self, progress)

    # -------------------------------------------------------------------------- search

    def search_bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.indexes.search_bm25(query, k)

    def search_dense(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the ``k`` nearest documents; ``DenseIndexError`` when the index
        file cannot be read."""
        return self.indexes.search_dense(query, k, self.encoder)
