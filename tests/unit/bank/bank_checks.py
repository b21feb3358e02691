"""What every bank test checks after ingesting: each document in the table and both indexes,
exactly once, with its own text."""

from __future__ import annotations

from longscan.bank import MemoryBank
from longscan.documents import Document


def assert_each_document_once(bank: MemoryBank, documents: list[Document]) -> None:
    keys = [row[0] for row in bank.db.execute("SELECT key FROM documents")]
    assert sorted(keys) == sorted(d.id for d in documents)
    assert bank.stats()["not_indexed"] == 0
    ids = [bank.id_of(d.id) for d in documents]
    assert [b.text for b in bank.get(ids)] == [d.text for d in documents]  # type: ignore[arg-type]
    dense = bank.indexes.dense()  # HNSW search is approximate: check the index itself
    assert len(dense) == len(documents) and all(i in dense for i in ids)
    bm25 = bank.indexes.bm25()
    bm25.reload()
    assert bm25.searcher().num_docs == len(documents)
