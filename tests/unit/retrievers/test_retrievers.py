from __future__ import annotations

import numpy as np
import pytest

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.items import GoldSpan, QAItem
from longscan.lexical.fusion import fuse_rankings, reciprocal_rank_fusion, score_fusion
from longscan.retrievers import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    OracleRetriever,
    RandomRetriever,
    available,
    get_retriever,
)

TEA_PARTY = "the Hatter says it is always six o'clock, tea-time"


def check_exact(evidence, documents) -> None:
    texts = {d.id: d.text for d in documents}
    for item in evidence:
        assert texts[item.doc_id][item.start : item.end] == item.text
    scores = [item.score for item in evidence]
    assert scores == sorted(scores, reverse=True)


def test_rrf_on_a_hand_made_ranking() -> None:
    bm25 = np.array([3.0, 2.0, 1.0])  # ranks 1, 2, 3
    dense = np.array([0.1, 0.9, 0.5])  # ranks 3, 1, 2
    fused = reciprocal_rank_fusion([bm25, dense], k=60)
    expected = [1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62]
    assert fused == pytest.approx(expected)
    assert list(np.argsort(-fused)) == [1, 0, 2]


def test_id_rankings_fuse_as_score_arrays_do() -> None:
    bm25 = np.array([3.0, 2.0, 1.0])
    dense = np.array([0.1, 0.9, 0.5])
    fused = fuse_rankings([[0, 1, 2], [1, 2, 0]])
    assert [item for item, _ in fused] == [1, 0, 2]
    assert dict(fused) == pytest.approx(dict(enumerate(reciprocal_rank_fusion([bm25, dense]))))


def test_an_id_one_ranking_lacks_gets_nothing_from_it() -> None:
    assert fuse_rankings([[7, 3], [3]], k=0) == [(3, 1 / 2 + 1 / 1), (7, 1 / 1)]
    with pytest.raises(ValueError, match="non-negative"):
        fuse_rankings([[1]], k=-1)


def test_score_fusion_normalises_each_ranking() -> None:
    fused = score_fusion([np.array([10.0, 0.0, 5.0]), np.array([0.2, 0.4, 0.3])], [0.5, 0.5])
    assert fused == pytest.approx([0.5, 0.5, 0.5])
    assert score_fusion([np.ones(3)], [1.0]) == pytest.approx([0, 0, 0])


def test_bm25_finds_the_tea_party_and_offsets_are_exact(novel: Document) -> None:
    evidence = BM25Retriever("sentence").retrieve(TEA_PARTY, [novel], top_k=10)
    check_exact(evidence, [novel])
    assert any("six o'clock" in item.text for item in evidence)


def test_bm25_chunks_are_300_words(novel: Document) -> None:
    evidence = BM25Retriever("chunk").retrieve(TEA_PARTY, [novel], top_k=5)
    check_exact(evidence, [novel])
    assert all(len(item.text.split()) <= 300 for item in evidence)
    assert any("six o'clock" in item.text for item in evidence)


def test_bm25_query_of_stop_words_returns_a_ranking_not_an_error(novel: Document) -> None:
    evidence = BM25Retriever("sentence").retrieve("the of and", [novel], top_k=3)
    assert len(evidence) == 3


@pytest.mark.parametrize("name", ["bm25-sentence", "bm25-chunk", "hybrid-sentence", "scanner"])
def test_a_document_without_content_terms_is_ranked_not_an_error(name: str) -> None:
    """Only stop words and punctuation: bm25s cannot index it (its vocabulary is empty)."""
    documents = [Document("d", "It is. Oh! Was it?\n\n...")]
    evidence = get_retriever(name).retrieve("what is it", documents, top_k=3)
    assert len(evidence) == (1 if name.endswith("chunk") else 3)  # one chunk, three sentences
    assert all(np.isfinite(item.score) for item in evidence)
    check_exact(evidence, documents)


def test_dense_and_hybrid_never_re_encode_a_document(novel: Document, isolated_cache) -> None:
    bm25, dense = BM25Retriever("sentence"), DenseRetriever("sentence")
    hybrid = HybridRetriever("sentence", bm25=bm25, dense=dense)
    first = dense.retrieve(TEA_PARTY, [novel], top_k=5)
    encoded = dense.encoded_units
    assert encoded == len(novel.sentences)
    second = hybrid.retrieve("Who cares for you? You're nothing but a pack of cards", [novel])
    third = dense.retrieve(TEA_PARTY, [novel], top_k=5)
    assert dense.encoded_units == encoded and bm25.index_builds == 1
    assert [e.start for e in first] == [e.start for e in third]
    check_exact(second, [novel])
    # A fresh process (new retriever, new in-memory cache) reads the vectors from disk.
    fresh = DenseRetriever("sentence", cache=EmbeddingCache(isolated_cache / "embeddings"))
    fresh.retrieve(TEA_PARTY, [novel], top_k=1)
    assert fresh.encoded_units == 0


def test_dense_cache_invalidates_when_text_changes() -> None:
    dense = DenseRetriever("sentence")
    dense.retrieve("apples", [Document("d", "Apples are red. Pears are green.")])
    dense.retrieve("apples", [Document("d", "Apples are red. Plums are blue.")])
    assert dense.encoded_units == 4


def test_collection_search_spans_documents() -> None:
    documents = [
        Document("cats.txt", "Cats purr when content. They sleep a lot."),
        Document("ships.txt", "The ship sailed at dawn. Its hull was made of oak."),
    ]
    for name in available():
        evidence = get_retriever(name).retrieve("What was the hull made of?", documents)
        check_exact(evidence, documents)
        assert {e.doc_id for e in evidence} == {"cats.txt", "ships.txt"}
        if name != "random":
            assert evidence[0].doc_id == "ships.txt" and "hull" in evidence[0].text


def test_random_is_reproducible(novel: Document) -> None:
    first = RandomRetriever(seed=3).retrieve("q", [novel], top_k=5)
    assert first == RandomRetriever(seed=3).retrieve("q", [novel], top_k=5)
    assert first != RandomRetriever(seed=4).retrieve("q", [novel], top_k=5)


def test_oracle_ranks_gold_first(novel: Document) -> None:
    start = novel.text.index("nothing but a pack of cards")
    item = QAItem(
        id="q1",
        query="What are they?",
        documents=[novel],
        gold_spans=[GoldSpan("alice", start, start + 27)],
    )
    top = OracleRetriever([item]).retrieve(item.query, item.documents, top_k=1)[0]
    assert "pack of cards" in top.text


@pytest.mark.parametrize("query", ["", "   ", "x" * 9000])
def test_bad_queries_are_rejected_clearly(query: str, novel: Document) -> None:
    with pytest.raises(ValueError, match="query"):
        BM25Retriever().retrieve(query, [novel])


def test_unknown_retriever_lists_known_names() -> None:
    with pytest.raises(ValueError, match="bm25-sentence"):
        get_retriever("nope")
