"""Whether any evidence answers the question at all: the cross-encoder reads the sentences
of the best few evidence spans, and below a calibrated score nothing was found.

Why the cross-encoder and not the retriever's own score: a scan, BM25 or a dense ranking
orders the units of the documents at hand, and its best score rises with how many units
compete and how many words match. Measured on the development split (docs/experiments.md,
"Abstention"), the scan gave "Who won the 1998 World Cup?" over the bundled novel a higher
best score than "Where is the key?" over a five-sentence story that says where; the
cross-encoder reads each (question, sentence) pair on its own, so its score means the same
over a story, a novel or a 20k-word collection, and over any retriever's evidence.

The threshold is ``abstain_below`` in the re-scorer's ``config.json``, chosen by
``benchmarks/abstention.py`` on the scanner's evidence (five sentences). Over a chunk
retriever's evidence the maximum runs over more sentences, so it abstains somewhat less.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np

from longscan.documents import Document, Evidence
from longscan.encoders.adapter import CONFIG_FILE, AdapterError
from longscan.rerankers.cross_encoder import PACKAGED, join_hop

JUDGED_SPANS = 5  # the best evidence spans whose sentences are read
# at most this many sentences: a sentence retriever's five spans are five sentences; a
# chunk retriever's best chunk (300 words) holds about 15, and its answer may sit in any
JUDGED_SENTENCES = 24


class Judge(Protocol):
    """A cross-encoder: how it reads a sentence, and its scores of (query, passage) pairs;
    ``digest`` names its adapter weights."""

    digest: str

    def passage(self, document: Document, index: int) -> str: ...

    def fit_query(self, query: str) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


@cache
def shipped_judge() -> Judge:
    """The shipped re-scorer, once per process: through ONNX Runtime where the encoders run
    there (a CPU), so a question imports no torch; through PyTorch on a GPU."""
    from longscan.encoders.bert import chosen_runtime

    if chosen_runtime() == "onnx":
        from longscan.rerankers.onnx import OnnxCrossEncoder

        return OnnxCrossEncoder()
    from longscan.rerankers.cross_encoder import get_reranker

    return get_reranker()


def judged_sentences(
    evidence: Sequence[Evidence], documents: Sequence[Document]
) -> list[tuple[Document, int]]:
    """The sentences under the best ``JUDGED_SPANS`` evidence spans, best span first, at
    most ``JUDGED_SENTENCES``, each once."""
    by_id = {document.id: document for document in documents}
    chosen: list[tuple[str, int]] = []
    for item in evidence[:JUDGED_SPANS]:
        document = by_id.get(item.doc_id)
        if document is None or len(document.sentences) == 0:
            continue
        ends, starts = document.sentences[:, 1], document.sentences[:, 0]
        first = int(np.searchsorted(ends, item.start, side="right"))
        last = int(np.searchsorted(starts, item.end, side="left"))
        chosen += [(item.doc_id, i) for i in range(first, max(last, first + 1))]
    readable = [(d, i) for d, i in dict.fromkeys(chosen) if i < len(by_id[d].sentences)]
    return [(by_id[d], i) for d, i in readable[:JUDGED_SENTENCES]]


def judged_passages(
    judge: Judge, evidence: Sequence[Evidence], documents: Sequence[Document]
) -> list[str]:
    """The judged sentences (``judged_sentences``), each in the context the re-scorer was
    trained to read."""
    return [judge.passage(d, i) for d, i in judged_sentences(evidence, documents)]


def best_judgement(
    query: str,
    evidence: Sequence[Evidence],
    documents: Sequence[Document],
    judge: Judge | None = None,
) -> float:
    """The re-scorer's highest logit over the judged sentences, read in the two rounds the
    ``rerank`` retrievers read (``rerankers.rounds``): the question alone, then the question
    joined with the best sentence of round one against the others. A sentence that answers
    only through another ("Its designer was ..." after "The tower was built ...") scores low
    alone and high in round two; the judge and the ranking that showed the sentence then
    give it the same score. ``-inf`` with no evidence."""
    judge = judge or shipped_judge()
    sentences = judged_sentences(evidence, documents)
    if not sentences:
        return -math.inf
    query = judge.fit_query(query)
    first = judge.score(query, [judge.passage(d, i) for d, i in sentences])
    if len(sentences) == 1:
        return float(first.max())
    best = int(np.argmax(first))
    document, index = sentences[best]
    start, end = (int(v) for v in document.sentences[index])
    others = [judge.passage(d, i) for k, (d, i) in enumerate(sentences) if k != best]
    second = judge.score(join_hop(query, document.text[start:end]), others)
    return float(max(first.max(), second.max()))


@cache
def abstain_below(directory: str | Path = PACKAGED) -> float | None:
    """The calibrated threshold recorded beside a re-scorer's adapter (read once per process,
    not once per question); None when absent.

    Raises:
        AdapterError: the recorded value is not a number.
    """
    path = Path(directory) / CONFIG_FILE
    value = json.loads(path.read_text(encoding="utf-8")).get("abstain_below")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise AdapterError(f"{path}: abstain_below must be a number or absent")
    return None if value is None else float(value)


def abstains(
    query: str,
    evidence: Sequence[Evidence],
    documents: Sequence[Document],
    threshold: float | None = None,
) -> bool:
    """Whether no evidence answers ``query``: the shipped re-scorer's best judgement is below
    ``threshold`` (default: the calibrated one; never, when none is recorded)."""
    threshold = abstain_below() if threshold is None else threshold
    if threshold is None:
        return False
    return best_judgement(query, evidence, documents) < threshold


__all__ = [
    "Judge",
    "abstain_below",
    "abstains",
    "best_judgement",
    "judged_passages",
    "judged_sentences",
    "shipped_judge",
]
