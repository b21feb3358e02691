"""The memory bank: CRUD across restarts, resumable ingestion, two-stage search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bank_checks import assert_each_document_once

from longscan.bank import MemoryBank, search
from longscan.documents import Document


def test_crud_survives_a_restart(tmp_path: Path, paragraphs: list[Document]) -> None:
    bank = MemoryBank(tmp_path)
    assert bank.add(paragraphs, source="hotpotqa", domain="wiki")["added"] == len(paragraphs)
    bank.sync(progress=False)
    target = paragraphs[3]
    word = max(target.text.split(), key=len).strip(".,;:()\"'")
    assert bank.id_of(target.id) in [i for i, _ in bank.search_bm25(word, 5)]
    del bank
    reopened = MemoryBank(tmp_path)  # a new process would see the same
    assert len(reopened) == len(paragraphs) and reopened.stats()["not_indexed"] == 0
    doc_id = reopened.id_of(target.id)
    assert reopened.get([doc_id])[0].text == target.text
    counts = reopened.add([Document(target.id, "Zanzibar quokkas juggle marmalade.")])
    assert counts == {"added": 0, "updated": 1, "replaced": 0, "unchanged": 0}
    reopened.sync(progress=False)
    assert reopened.id_of(target.id) == doc_id  # an update keeps the id
    assert [i for i, _ in reopened.search_bm25("quokkas marmalade", 3)] == [doc_id]
    removed = reopened.id_of(paragraphs[0].id)
    assert reopened.remove([paragraphs[0].id]) == 1
    again = MemoryBank(tmp_path)
    assert len(again) == len(paragraphs) - 1 and again.id_of(paragraphs[0].id) is None
    assert removed not in again.indexes.dense()  # gone from both indexes, after a restart
    assert removed not in [i for i, _ in again.search_bm25(paragraphs[0].text[:200], 50)]
    catalog = again.catalog()  # what the service lists: oldest first, the update in place
    assert [entry.key for entry in catalog] == [p.id for p in paragraphs[1:]]
    assert again.catalog([doc_id, removed]) == [catalog[2]]
    assert (catalog[2].id, catalog[2].chars) == (doc_id, len("Zanzibar quokkas juggle marmalade."))


def test_one_add_with_a_key_twice_stores_the_last_text_once(tmp_path: Path) -> None:
    bank = MemoryBank(tmp_path)
    twice = [Document("note", "First draft."), Document("note", "Final text.")]
    assert bank.add(twice) == {"added": 1, "updated": 0, "replaced": 0, "unchanged": 0}
    assert [d.text for d in bank.get([bank.id_of("note")])] == ["Final text."]
    assert bank.add(twice) == {"added": 0, "updated": 0, "replaced": 0, "unchanged": 1}


def test_interrupted_ingestion_resumes_without_loss_or_duplicates(
    tmp_path: Path, paragraphs: list[Document]
) -> None:
    def dies_after(n: int) -> Iterator[Document]:
        for i, document in enumerate(paragraphs):
            if i == n:
                raise KeyboardInterrupt  # the process is stopped mid-ingestion
            yield document

    bank = MemoryBank(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        bank.add(dies_after(len(paragraphs) // 2), batch=4)
    survived = len(bank)
    assert 0 < survived <= len(paragraphs) // 2
    resumed = MemoryBank(tmp_path)
    counts = resumed.add(paragraphs, batch=4)
    assert counts["unchanged"] == survived and counts["added"] == len(paragraphs) - survived
    resumed.sync(progress=False)
    assert_each_document_once(resumed, paragraphs)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, paragraphs: list[Document]) -> MemoryBank:
    """A bank of the paragraphs, indexed; the tests that take it only read it."""
    bank = MemoryBank(tmp_path_factory.mktemp("indexed"))
    bank.add(paragraphs)
    bank.sync(progress=False)
    return bank


def test_two_stage_search_returns_documents_with_exact_evidence_offsets(
    indexed: MemoryBank, paragraphs: list[Document]
) -> None:
    from longscan.scanning.scanner import Scanner

    bank = indexed
    target = paragraphs[5]
    query = " ".join(target.text.split()[:12])
    first = search(bank, query, k=5, method="bm25")
    assert first[0].key == target.id and not first[0].evidence
    hits = search(bank, query, k=5, method="hybrid", depth=10, scanner=Scanner.from_pretrained())
    assert len(hits) == 5 and len({h.doc_id for h in hits}) == 5
    for hit in hits:
        text = bank.get([hit.doc_id])[0].text
        assert hit.evidence and all(text[e.start : e.end] == e.text for e in hit.evidence)


def test_candidate_ceiling_grows_with_depth_to_every_gold_document(
    indexed: MemoryBank, paragraphs: list[Document]
) -> None:
    from longscan.bench.builders import build_multihop
    from longscan.bench.ladder import LadderQuery, candidate_ceiling

    items = build_multihop("hotpotqa", "dev", 3_000, max_items=6, mode="collection")
    queries = [LadderQuery(i.id, i.query, tuple(i.gold_doc_ids), "hotpotqa") for i in items]
    depths = (1, 5, 20, len(paragraphs))
    ceiling = candidate_ceiling(indexed, queries, depths)
    sr = [ceiling[depth]["SR"] for depth in depths]
    fr = [ceiling[depth]["FR"] for depth in depths]
    assert sr == sorted(sr) and fr == sorted(fr)  # more candidates never hold less
    assert sr[0] <= 0.5 < sr[2]  # one candidate holds at most one of two gold documents
    assert sr[-1] == fr[-1] == 1.0  # every document is a candidate
