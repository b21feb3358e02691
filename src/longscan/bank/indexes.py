"""The bank's two indexes over its documents, kept beside ``bank.sqlite`` and derived from it
(``MemoryBank.repair`` rebuilds either from the table).

* BM25 over whole documents is a tantivy index (``bm25/``): it adds and deletes documents
  incrementally, where a bm25s index would need a full rebuild.
* Dense vectors are a usearch index (``dense.usearch``, cosine): keys are the document ids,
  so updates and deletes touch one entry. A document's vector is MiniLM's embedding of its
  first window (title and opening, up to 256 tokens): one vector per document keeps
  ingestion of millions of documents linear and cheap.

usearch keeps the whole dense index in memory and saves it whole, so two writers would each
save their own over the other's: only the writer-lock holder saves, and it first reloads what
another process saved.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from longscan.bank.dense import usearch_index
from longscan.bank.errors import BM25IndexError, DenseIndexError
from longscan.bank.lock import WriterLock
from longscan.encoders.external import PACKAGED

DENSE_WINDOW_TOKENS = 256


class Indexes:
    """The BM25 and dense indexes of the bank in ``folder``, opened on first use, changed
    together.

    Args:
        folder: The bank's folder.
        dim: The length of the dense vectors (the bank's encoder's).
        lock: The bank's writer lock: the dense index is saved only by its holder.
    """

    def __init__(self, folder: Path, dim: int, lock: WriterLock) -> None:
        self.folder = folder
        self.dim = dim
        self.lock = lock
        self._bm25: Any = None
        self._dense: Any = None
        self._dense_stamp: tuple[int, ...] | None = None  # the file the index in memory is
        self._dense_dirty = False  # changed in memory since loaded or saved

    def bm25(self) -> Any:
        """The tantivy index; ``BM25IndexError`` when it cannot be opened."""
        if self._bm25 is None:
            import tantivy

            builder = tantivy.SchemaBuilder()
            builder.add_integer_field("doc_id", stored=True, indexed=True, fast=True)
            builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
            folder = self.folder / "bm25"
            folder.mkdir(exist_ok=True)
            try:
                self._bm25 = tantivy.Index(builder.build(), path=str(folder))
            except ValueError as error:
                raise BM25IndexError(
                    f"the BM25 index {folder} cannot be opened ({error}); "
                    f"`longscan bank repair --bank {self.folder}` rebuilds it from the documents"
                ) from None
        return self._bm25

    def dense(self) -> Any:
        """The dense index, reloaded when another process has saved a newer file (writers
        hold the lock, so that happens before a write, or between searches)."""
        file = self.folder / "dense.usearch"
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
                        f"`longscan bank repair --bank {self.folder}` rebuilds it from the "
                        "documents"
                    ) from None
                if self._dense is None or self._dense.ndim != self.dim:
                    self._dense = None
                    raise DenseIndexError(
                        f"the dense index {file} is not a {self.dim}-dimension usearch "
                        f"index; `longscan bank repair --bank {self.folder}` rebuilds it"
                    )
            self._dense_stamp = stamp
        return self._dense

    # ------------------------------------------------------------------------- changes

    def put(self, rows: Sequence[tuple[int, str]], vectors: np.ndarray) -> None:
        """Put ``(id, text)`` rows and their vectors in both indexes, replacing older entries
        (in one BM25 commit: tantivy applies a delete only to documents added before it).
        The dense index is changed in memory only: ``save_dense`` writes it."""
        import tantivy

        ids = [doc_id for doc_id, _ in rows]
        writer = self.bm25().writer(heap_size=100_000_000, num_threads=1)
        self._forget(writer, ids)
        for doc_id, text in rows:
            writer.add_document(tantivy.Document(doc_id=doc_id, body=text))
        writer.commit()
        writer.wait_merging_threads()
        dense = self.dense()
        self._dense_dirty = True
        dense.add(np.asarray(ids, dtype=np.uint64), vectors.astype(np.float32))

    def delete(self, ids: Sequence[int]) -> None:
        """Take ``ids`` out of both indexes, and save the dense one."""
        writer = self.bm25().writer(heap_size=50_000_000, num_threads=1)
        self._forget(writer, ids)
        writer.commit()
        writer.wait_merging_threads()
        self.save_dense()

    def _forget(self, writer: Any, ids: Sequence[int]) -> None:
        """Delete ``ids`` from the BM25 writer's next commit and from the dense index."""
        for doc_id in ids:
            writer.delete_documents_by_term("doc_id", doc_id)
        dense = self.dense()
        for doc_id in ids:
            if doc_id in dense:
                dense.remove(doc_id)
                self._dense_dirty = True

    def save_dense(self) -> None:
        """Write the dense index beside the old file, then swap: a crash mid-write never
        leaves an unreadable index. Only the writer-lock holder saves."""
        if not self.lock.held:
            raise RuntimeError("the dense index is saved only under the writer lock")
        file = self.folder / "dense.usearch"
        partial = file.with_suffix(".usearch.partial")
        self.dense().save(str(partial))
        partial.replace(file)
        self._dense_stamp, self._dense_dirty = _stamp(file), False

    def discard_unsaved(self) -> None:
        """Drop dense changes never saved (a write that failed before saving left its rows
        unflagged), so that the index is read again from its file."""
        if self._dense_dirty:
            self._dense, self._dense_dirty = None, False

    def drop_bm25(self) -> None:
        """Delete the BM25 index (derived from the table: ``sync`` rebuilds it)."""
        self._bm25 = None
        shutil.rmtree(self.folder / "bm25")

    def drop_dense(self) -> None:
        """Delete the dense index file (derived from the table: ``sync`` rebuilds it)."""
        (self.folder / "dense.usearch").unlink()
        self._dense = None

    def reload(self) -> None:
        """Let searches see what the last commits added to the BM25 index."""
        if self._bm25 is not None:
            self._bm25.reload()

    # ---------------------------------------------------------------------- reading

    def bm25_ids(self) -> Counter[int]:
        """How many times each document id is in the BM25 index."""
        import tantivy

        index = self.bm25()
        index.reload()
        searcher = index.searcher()
        if searcher.num_docs == 0:
            return Counter()
        hits = searcher.search(tantivy.Query.all_query(), searcher.num_docs).hits
        return Counter(searcher.fast_field_values("doc_id", [address for _, address in hits]))

    def entries(self) -> dict[str, int | str]:
        """How many entries each index holds, or that it cannot be read."""
        entries: dict[str, int | str] = {}
        try:
            index = self.bm25()
            index.reload()
            entries["bm25"] = int(index.searcher().num_docs)
        except BM25IndexError:
            entries["bm25"] = "unreadable: run `longscan bank repair`"
        try:
            entries["dense"] = len(self.dense())
        except DenseIndexError:
            entries["dense"] = "unreadable: run `longscan bank repair`"
        return entries

    def search_bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(id, score)`` of the ``k`` best documents for ``query`` as free text."""
        index = self.bm25()
        index.reload()
        searcher = index.searcher()
        if searcher.num_docs == 0:
            return []
        parsed = index.parse_query(_escape(query), ["body"])
        return [
            (int(searcher.doc(a)["doc_id"][0]), float(score))
            for score, a in searcher.search(parsed, k).hits
        ]

    def search_dense(self, query: str, k: int, encoder: str) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the ``k`` nearest documents to ``query`` as ``encoder`` embeds
        it (loaded only when the index holds any)."""
        dense = self.dense()
        if len(dense) == 0:
            return []
        from longscan.encoders.external import load_text_encoder

        query_vectors = load_text_encoder(encoder).encode([query])
        vector = np.asarray(query_vectors, dtype=np.float32)[0]
        matches = dense.search(vector, min(k, len(dense)))
        return [
            (int(key), 1.0 - float(distance))
            for key, distance in zip(matches.keys, matches.distances, strict=True)
        ]


def embed_openings(texts: Sequence[str], encoder: str = PACKAGED) -> np.ndarray:
    """``(len(texts), dim)``: one vector per document, its first window (MiniLM truncates at
    256 tokens), by the encoder ``encoder`` names."""
    from longscan.encoders.external import load_text_encoder

    heads = [text[: DENSE_WINDOW_TOKENS * 8] for text in texts]  # cheap cut before tokenising
    return np.asarray(load_text_encoder(encoder).encode(heads), dtype=np.float32)


def _stamp(file: Path) -> tuple[int, ...] | None:
    """What tells one saved file from the next (a save replaces the file: a new inode)."""
    try:
        status = file.stat()
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_mtime_ns, status.st_size)


def _escape(query: str) -> str:
    """A free-text query for tantivy's parser: its syntax characters become spaces, and words
    are lower-cased, so ``IN``, ``AND``, ``OR`` and ``NOT`` are words, not operators (the
    index lower-cases anyway)."""
    cleaned = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in query.lower())
    return " ".join(cleaned.split()) or "_"
