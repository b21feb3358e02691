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
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.minilm import EMBEDDING_DIM  # the driver never loads the model for it

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL DEFAULT '',
    domain TEXT NOT NULL DEFAULT '',
    tokens INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    text TEXT NOT NULL,
    added REAL NOT NULL,
    indexed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_domain ON documents(domain);
"""
DENSE_WINDOW_TOKENS = 256


@dataclass(frozen=True)
class BankDocument:
    id: int
    key: str
    source: str
    domain: str
    tokens: int
    text: str

    def as_document(self) -> Document:
        return Document(str(self.id), self.text, metadata={"key": self.key, "domain": self.domain})


@dataclass(frozen=True)
class DocumentInfo:
    """What a catalog lists of a bank document: everything but its text."""

    id: int
    key: str
    chars: int
    tokens: int


@dataclass(frozen=True)
class Change:
    """A document to write: new, or an update of the stored one with the same key."""

    document: Document
    digest: str
    update: bool


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


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class MemoryBank:
    """Documents and their BM25 and dense indexes in one folder.

    Changes are written to SQLite first and flagged ``indexed = 0``; ``sync`` brings the
    indexes up to date, so a crash between the two is repaired by the next ``sync``.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path / "bank.sqlite"))
        self.db.executescript(SCHEMA)
        self.db.commit()
        self._bm25: Any = None
        self._dense: Any = None
        self._encoder: Any = None

    # ----------------------------------------------------------------------- documents

    def add(
        self, documents: Iterable[Document], source: str = "", domain: str = "", batch: int = 256
    ) -> dict[str, int]:
        """Add or update documents by key (``Document.id``); returns counts of what happened.

        Unchanged documents are skipped, so running the same ``add`` twice (or again after an
        interruption) neither loses nor duplicates anything.
        """
        from longscan.answering.tokens import count_tokens

        counts = {"added": 0, "updated": 0, "unchanged": 0}
        for group in groups(documents, batch):
            changes, unchanged = self.triage(group)
            counts["unchanged"] += unchanged
            for change in changes:
                counts["updated" if change.update else "added"] += 1
            self.upsert(
                [
                    (c.document.id, source, domain, count_tokens(c.document.text), c.digest,
                     c.document.text)
                    for c in changes
                ]
            )  # fmt: skip
        return counts

    def triage(self, documents: Sequence[Document]) -> tuple[list[Change], int]:
        """The new or changed documents among ``documents`` (of equal keys the last wins),
        and how many are stored unchanged: what ``add`` and ingestion write, and skip."""
        latest = list({document.id: document for document in documents}.values())
        known = self.known([document.id for document in latest])
        changes = []
        for document in latest:
            digest = content_hash(document.text)
            if known.get(document.id) != digest:
                changes.append(Change(document, digest, document.id in known))
        return changes, len(latest) - len(changes)

    def upsert(self, rows: Sequence[tuple[Any, ...]]) -> list[int]:
        """Upsert ``(key, source, domain, tokens, content hash, text)`` rows, not yet indexed;
        returns their ids (an update keeps its id)."""
        with self.db:  # one transaction per batch: a batch is in, or it is not
            for key, source, domain, tokens, digest, text in rows:
                self.db.execute(
                    """INSERT INTO documents
                         (key, source, domain, tokens, content_hash, text, added, indexed)
                       VALUES (?, ?, ?, ?, ?, ?, ?, 0)
                       ON CONFLICT(key) DO UPDATE SET source = excluded.source,
                         domain = excluded.domain, tokens = excluded.tokens,
                         content_hash = excluded.content_hash, text = excluded.text, indexed = 0""",
                    (key, source, domain, tokens, digest, text, time.time()),
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
        """Delete documents by key, from the table and from both indexes."""
        ids = [doc_id for doc_id in map(self.id_of, keys) if doc_id is not None]
        if ids:
            self._unindex(ids)
            with self.db:
                self.db.executemany("DELETE FROM documents WHERE id = ?", [(i,) for i in ids])
        return len(ids)

    def get(self, ids: Sequence[int]) -> list[BankDocument]:
        """Documents by id, in the order asked (missing ids are left out)."""
        found = {
            row[0]: BankDocument(*row)
            for row in self._rows_where("id, key, source, domain, tokens, text", "id", ids)
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
        rows = self.db.execute(
            "SELECT domain, COUNT(*), SUM(tokens), SUM(indexed = 0) FROM documents GROUP BY domain"
        ).fetchall()
        return {
            "documents": sum(r[1] for r in rows),
            "tokens": int(sum(r[2] or 0 for r in rows)),
            "not_indexed": int(sum(r[3] or 0 for r in rows)),
            "domains": {r[0] or "-": {"documents": r[1], "tokens": int(r[2] or 0)} for r in rows},
            "path": str(self.path),
        }

    # ------------------------------------------------------------------------- indexes

    def _bm25_index(self) -> Any:
        if self._bm25 is None:
            import tantivy

            builder = tantivy.SchemaBuilder()
            builder.add_integer_field("doc_id", stored=True, indexed=True, fast=True)
            builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
            folder = self.path / "bm25"
            folder.mkdir(exist_ok=True)
            self._bm25 = tantivy.Index(builder.build(), path=str(folder))
        return self._bm25

    def _dense_index(self) -> Any:
        if self._dense is None:
            from usearch.index import Index

            file = self.path / "dense.usearch"
            self._dense = (
                Index.restore(str(file), view=False)
                if file.is_file()
                else Index(ndim=EMBEDDING_DIM, metric="cos", dtype="f32")
            )
        return self._dense

    def _get_encoder(self) -> Any:
        if self._encoder is None:
            from longscan.encoders import get_encoder

            self._encoder = get_encoder()
        return self._encoder

    def _unindex(self, ids: Sequence[int]) -> None:
        writer = self._bm25_index().writer(heap_size=50_000_000, num_threads=1)
        self._forget(writer, ids)
        writer.commit()
        writer.wait_merging_threads()
        self._save_dense()

    def _save_dense(self) -> None:
        """Write the dense index beside the old file, then swap: a crash mid-write never
        leaves an unreadable index."""
        file = self.path / "dense.usearch"
        partial = file.with_suffix(".usearch.partial")
        self._dense_index().save(str(partial))
        partial.replace(file)

    def _forget(self, writer: Any, ids: Sequence[int]) -> None:
        """Delete ``ids`` from the BM25 writer's next commit and from the dense index."""
        for doc_id in ids:
            writer.delete_documents_by_term("doc_id", doc_id)
        dense = self._dense_index()
        for doc_id in ids:
            if doc_id in dense:
                dense.remove(doc_id)

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
        writer = self._bm25_index().writer(heap_size=100_000_000, num_threads=1)
        self._forget(writer, ids)
        for doc_id, text in rows:
            writer.add_document(tantivy.Document(doc_id=doc_id, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self._dense_index().add(np.asarray(ids, dtype=np.uint64), vectors.astype(np.float32))
        if mark:
            self.mark_indexed(ids)

    def mark_indexed(self, ids: Sequence[int]) -> None:
        """Save the dense index, then flag ``ids`` indexed: a crash between the two leaves rows
        to index again (``index_batch`` replaces), never a flag without its vector."""
        self._save_dense()
        with self.db:
            self.db.executemany(
                "UPDATE documents SET indexed = 1 WHERE id = ?", [(i,) for i in ids]
            )

    def sync(self, batch: int = 256, progress: bool = True) -> int:
        """Index every document not yet indexed; returns how many were indexed."""
        from tqdm.auto import tqdm

        total = int(
            self.db.execute("SELECT COUNT(*) FROM documents WHERE indexed = 0").fetchone()[0]
        )
        done = 0
        with tqdm(
            total=total, desc="indexing", unit="doc", disable=not progress or not total
        ) as bar:
            for rows in self.pending(batch):
                self.index_batch(rows, embed_openings([t for _, t in rows]))
                done += len(rows)
                bar.update(len(rows))
        self.reload()
        return done

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
        dense = self._dense_index()
        if len(dense) == 0:
            return []
        vector = np.asarray(self._get_encoder().encode([query]), dtype=np.float32)[0]
        matches = dense.search(vector, min(k, len(dense)))
        return [
            (int(key), 1.0 - float(distance))
            for key, distance in zip(matches.keys, matches.distances, strict=True)
        ]


def embed_openings(texts: Sequence[str]) -> np.ndarray:
    """``(len(texts), dim)``: one vector per document, its first window (MiniLM truncates at
    256 tokens)."""
    from longscan.encoders import get_encoder

    heads = [text[: DENSE_WINDOW_TOKENS * 8] for text in texts]  # cheap cut before tokenising
    return np.asarray(get_encoder().encode(heads), dtype=np.float32)


def _escape(query: str) -> str:
    """A free-text query for tantivy's parser: its syntax characters become spaces, and words
    are lower-cased, so ``IN``, ``AND``, ``OR`` and ``NOT`` are words, not operators (the
    index lower-cases anyway)."""
    cleaned = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in query.lower())
    return " ".join(cleaned.split()) or "_"
