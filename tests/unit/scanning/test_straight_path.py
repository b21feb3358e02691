"""One straight path per query: the first stage runs once, the columns and the re-scorer's
second round read it, and nothing is indexed twice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from longscan.documents import Document
from longscan.rerankers.cross_encoder import get_reranker
from longscan.rerankers.rounds import TwoRounds
from longscan.retrievers import get_retriever
from longscan.retrievers.registry import parse_name
from longscan.scanning import first_stage
from longscan.scanning.scanner import Scanner


def test_a_rescored_query_indexes_the_documents_once_and_ranks_once(
    tiny_scanner: Scanner, novel: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds, first_stages = [], []
    index_tokens, run = first_stage.index_tokens, first_stage.FirstStage.run.__func__
    monkeypatch.setattr(first_stage, "index_tokens", lambda t: builds.append(1) or index_tokens(t))
    monkeypatch.setattr(
        first_stage.FirstStage,
        "run",
        classmethod(lambda cls, *a: first_stages.append(1) or run(cls, *a)),
    )
    tiny_scanner.rounds = TwoRounds(get_reranker(), depth=5, hop_depth=3, blend=1.0)
    documents = [Document("part", novel.text[:20_000])]
    first = tiny_scanner.score("Who followed the White Rabbit?", documents)
    again = tiny_scanner.score("What was written on the bottle?", documents)
    assert len(builds) == 1  # the second round queried the first stage's index
    assert len(first_stages) == 2  # once per query
    for scores in (first, again):
        assert scores.shape == (len(documents[0].sentences),) and np.isfinite(scores).all()
    scan_alone = Scanner(tiny_scanner.model, tiny_scanner.info, cache=tiny_scanner.cache)
    logits = scan_alone.score("Who followed the White Rabbit?", documents)
    unread = np.argsort(-first, kind="stable")[8:]  # below the 5 + 3 candidates
    assert list(unread) == [i for i in np.argsort(-logits, kind="stable") if i in set(unread)]


def test_the_rescoring_retrievers_read_the_shipped_adapter() -> None:
    assert Scanner.from_pretrained().rounds is None  # the default scanner is the scan alone
    rescored = get_retriever("scanner-rerank").scanner.rounds
    assert rescored is not None and rescored.blend
    assert rescored.reranker.digest == get_reranker().digest
    assert parse_name("scanner-rerank:runs/x") == ("scanner-rerank", Path("runs/x"))
    assert get_retriever("rerank").rounds.depth == 50
