"""TREC run and qrels files of an evaluation, for trec_eval, ir-measures, ranx and the
other tools of the field.

A run line is ``query Q0 sentence rank score tag``, a qrels line ``query 0 sentence 1``.
Sentences are named ``doc_id#index`` (``measures.sentence_key``); since the format splits
on white space, ids are percent-encoded (``urllib.parse.quote``), the same way in both
files. A chunk retriever's run lists the sentences its chunks cover (``sentences_of_units``).
Scores are ``n - rank`` (rank from 0), strictly decreasing, so a tool that sorts by score
and breaks ties by id sees exactly the retriever's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from longscan.evaluation.evaluator import EvaluationResult
from longscan.evaluation.gold import gold_sentences
from longscan.evaluation.measures import sentence_key
from longscan.items import QAItem

_SAFE = "#:/._-"  # left as they are in an id; everything else is percent-encoded


def trec_id(text: str) -> str:
    """``text`` as one white-space-free field of a TREC file."""
    return quote(text, safe=_SAFE)


def write_run(result: EvaluationResult, path: Path) -> Path:
    """The sentences ``result`` ranked for each item, as a TREC run tagged with its
    retriever's name."""
    tag = trec_id(result.retriever)
    lines = []
    for query, ranking in result.rankings.items():
        for rank, sentence in enumerate(ranking):
            key = trec_id(sentence_key(*sentence))
            lines.append(f"{trec_id(query)} Q0 {key} {rank + 1} {len(ranking) - rank} {tag}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_qrels(items: Iterable[QAItem], path: Path) -> Path:
    """The gold sentences of every item with gold spans, as TREC qrels (relevance 1)."""
    lines = [
        f"{trec_id(item.id)} 0 {trec_id(sentence_key(*sentence))} 1\n"
        for item in items
        for sentence in gold_sentences(item)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def run_paths(path: Path, retrievers: list[str]) -> dict[str, Path]:
    """Where each retriever's run goes: ``path`` for one retriever; for several, the name
    joins the file name (``runs.txt`` -> ``runs.scanner.txt``), since a TREC tool reads one
    system per file."""
    if len(retrievers) == 1:
        return {retrievers[0]: path}
    named = {name: re.sub(r"[^\w.-]+", "_", name) for name in retrievers}
    if len(set(named.values())) != len(named):
        raise ValueError(f"two retrievers would share a run file name: {sorted(named)}")
    return {
        name: path.with_name(f"{path.stem}.{safe}{path.suffix}") for name, safe in named.items()
    }
