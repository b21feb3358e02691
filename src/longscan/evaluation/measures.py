"""Measures: declarative names, and the sentence- and document-level implementations.

A measure is named ``family@cutoff`` and parsed from that name, so results, reports and
command lines all speak the same strings. The names say *what* is measured; the functions
below (and ``budgets``) say *how*. Three levels exist, and their families never share a name:

* budget (cutoff in words, see ``longscan.evaluation.budgets``): ``hit@B``, ``SR@B``,
  ``FR@B``, ``ahit@B``, ``aSR@B``, ``aFR@B``;
* sentence (cutoff in ranked sentences, computed by ir-measures): ``R@k``, ``P@k``,
  ``nDCG@k``;
* document (cutoff in ranked documents, EMB-S definitions): ``docSR@K``, ``docR@K``,
  ``docFR@K``; and ``docNDCG@K``, the in-context retrieval paper's score of a document
  ranking (computed by ir-measures).

Recall and success are different things: ``R@k`` is the fraction of gold sentences in the top
k, while ``hit@B`` and ``docFR@K`` are success-style 0/1 scores per query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import ir_measures

from longscan.documents import Evidence

Level = Literal["budget", "sentence", "document"]

DEFAULT_KS = (1, 5, 10, 50)
DEFAULT_DOC_KS = (1, 10)

_NAME = re.compile(r"^([A-Za-z]+)@([0-9]+)$")


@dataclass(frozen=True, slots=True)
class Family:
    """A kind of measure: its level and what one value means."""

    name: str
    level: Level
    description: str


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("hit", "budget", "1 if the first B words of evidence overlap any gold span"),
        Family("SR", "budget", "fraction of gold spans (or gold documents) overlapped in B words"),
        Family("FR", "budget", "1 if every gold span (or gold document) is overlapped in B words"),
        Family("ahit", "budget", "1 if a reference answer occurs in one unit of the B words"),
        Family("aSR", "budget", "fraction of an answer's parts that occur in the B words"),
        Family("aFR", "budget", "1 if every part of the answer occurs in the B words"),
        Family("R", "sentence", "fraction of gold sentences among the top k sentences"),
        Family("P", "sentence", "fraction of the top k sentences that are gold"),
        Family("nDCG", "sentence", "normalised discounted cumulative gain of the top k"),
        Family("docSR", "document", "fraction of gold documents among the top K documents"),
        Family("docR", "document", "single-source queries: the gold document is in the top K"),
        Family("docFR", "document", "multi-source queries: every gold document is in the top K"),
        Family("docNDCG", "document", "normalised DCG of the top K documents"),
    )
}


@dataclass(frozen=True, slots=True, order=True)
class Measure:
    """One measure, ``family@cutoff``; ``Measure.parse("nDCG@10")`` round-trips with ``name``.

    Attributes:
        family: A key of ``FAMILIES``.
        cutoff: Words (budget level), sentences (sentence level) or documents (document level).
    """

    family: str
    cutoff: int

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(
                f"unknown measure family {self.family!r}; choose one of {', '.join(FAMILIES)}"
            )
        if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int) or self.cutoff < 1:
            raise ValueError(f"{self.family}: the cutoff must be a positive integer")

    @classmethod
    def parse(cls, name: str | Measure) -> Measure:
        """Parse ``"family@cutoff"`` (a ``Measure`` is returned unchanged)."""
        if isinstance(name, Measure):
            return name
        match = _NAME.match(name.strip()) if isinstance(name, str) else None
        if match is None:
            raise ValueError(f"cannot parse measure {name!r}; expected 'family@cutoff'")
        return cls(match.group(1), int(match.group(2)))

    @property
    def name(self) -> str:
        return f"{self.family}@{self.cutoff}"

    @property
    def level(self) -> Level:
        return FAMILIES[self.family].level

    def __str__(self) -> str:
        return self.name


def parse_measures(names: Iterable[str | Measure]) -> list[Measure]:
    """Parse names, dropping duplicates but keeping the order given."""
    return list(dict.fromkeys(Measure.parse(name) for name in names))


def default_measures(
    budgets: Sequence[int], ks: Sequence[int] = DEFAULT_KS, doc_ks: Sequence[int] = DEFAULT_DOC_KS
) -> list[Measure]:
    """Every family at its cutoffs: budget families at ``budgets`` words, sentence families at
    ``ks`` sentences, ``docSR``/``docFR``/``docNDCG`` at ``doc_ks`` documents, and ``docR@1``."""
    budget_families = ("hit", "SR", "FR", "ahit", "aSR", "aFR")
    names = [f"{family}@{b}" for family in budget_families for b in budgets]
    names += [f"{family}@{k}" for family in ("R", "P", "nDCG") for k in ks]
    names += [f"docSR@{k}" for k in doc_ks] + ["docR@1"] + [f"docFR@{k}" for k in doc_ks]
    names += [f"docNDCG@{k}" for k in doc_ks]
    return parse_measures(names)


def of_level(measures: Iterable[Measure], level: Level) -> list[Measure]:
    return [measure for measure in measures if measure.level == level]


def sentence_key(doc_id: str, index: int) -> str:
    """The ir-measures document id of sentence ``index`` of ``doc_id``: ``f"{doc_id}#{index}"``."""
    return f"{doc_id}#{index}"


def sentence_scores(
    gold: Mapping[str, Iterable[tuple[str, int]]],
    ranked: Mapping[str, Sequence[tuple[str, int]]],
    measures: Sequence[Measure],
) -> dict[str, dict[str, float]]:
    """Per-query sentence-level measures, computed by ``ir_measures.iter_calc``.

    Qrels are the gold sentences with relevance 1; the run gives the sentence at rank r
    (0-based) of n the pseudo-score ``n - r``, strictly decreasing, so ir-measures (which
    breaks score ties by document id) sees exactly our ranking. With G the gold set and
    ``top_k`` the first k ranked sentences:

    * ``R@k = |G ∩ top_k| / |G|``
    * ``P@k = |G ∩ top_k| / k`` (k, not ``|top_k|``, as in trec_eval)
    * ``nDCG@k = DCG@k / IDCG@k`` with ``DCG@k = Σ_{r<k, s_r ∈ G} 1 / log2(r + 2)`` and IDCG the
      DCG of a ranking that puts all of G first.

    Args:
        gold: Query id -> gold ``(doc_id, sentence_index)``; queries with an empty set are
            skipped (the measures are undefined for them).
        ranked: Query id -> ranked sentences, best first.
        measures: Sentence-level measures.

    Returns:
        Query id -> measure name -> value, for every query with gold; a query missing from
        ``ranked`` (or ranked empty) scores 0 on every measure instead of vanishing.
    """
    if any(measure.level != "sentence" for measure in measures):
        raise ValueError("sentence_scores takes sentence-level measures (R, P, nDCG) only")
    qrels = {
        query: {sentence_key(*sentence): 1 for sentence in sentences}
        for query, sentences in gold.items()
    }
    qrels = {query: judged for query, judged in qrels.items() if judged}
    scores = {query: dict.fromkeys((m.name for m in measures), 0.0) for query in qrels}
    if not measures or not qrels:
        return scores
    run = {
        query: _pseudo_scores([sentence_key(*s) for s in ranked[query]])
        for query in qrels
        if ranked.get(query)
    }
    _ir_calc(qrels, run, {m.name: m.name for m in measures}, scores)
    return scores


def _pseudo_scores(ranking: Sequence[str]) -> dict[str, float]:
    """The run of one query: the id at rank r (0-based) of n scores ``n - r``."""
    return {key: float(len(ranking) - r) for r, key in enumerate(ranking)}


def _ir_calc(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    names: Mapping[str, str],
    scores: dict[str, dict[str, float]],
) -> None:
    """Fill ``scores[query][ours]`` with ir-measures' value of ``names[ours]`` (its name)."""
    by_ir_name = {str(ir_measures.parse_measure(theirs)): ours for ours, theirs in names.items()}
    native = [ir_measures.parse_measure(theirs) for theirs in names.values()]
    for metric in ir_measures.iter_calc(native, qrels, run):
        if metric.query_id in scores:
            scores[metric.query_id][by_ir_name[str(metric.measure)]] = float(metric.value)


def document_ranking(evidence: Iterable[Evidence]) -> list[str]:
    """Documents in order of first appearance in the ranked evidence."""
    return list(dict.fromkeys(unit.doc_id for unit in evidence))


def document_scores(
    ranking: Sequence[str], gold: Iterable[str], measures: Sequence[Measure]
) -> dict[str, float]:
    """Document-level measures of one query (EMB-S definitions), only those that apply.

    With G the gold documents and ``top_K`` the first K documents of ``ranking``:

    * ``docSR@K = |G ∩ top_K| / |G|`` for every query with ``|G| ≥ 1``;
    * ``docR@K = [g ∈ top_K]`` for single-source queries only (``G = {g}``); ``docR@1`` asks
      whether the top document is the gold one;
    * ``docFR@K = [G ⊆ top_K]`` for multi-source queries only (``|G| ≥ 2``);
    * ``docNDCG@K``: ``nDCG@k`` of ``sentence_scores`` over documents, for every query.

    Averaging each measure over the queries it applies to gives the EMB-S numbers, so
    single-source queries never inflate FR and multi-source queries never enter R@1.

    Returns:
        Measure name -> value; empty when G is empty.
    """
    if any(measure.level != "document" for measure in measures):
        raise ValueError("document_scores takes document-level measures only")
    gold_set = set(gold)
    scores: dict[str, float] = {}
    if not gold_set:
        return scores
    for measure in measures:
        found = len(gold_set.intersection(ranking[: measure.cutoff]))
        if measure.family == "docSR":
            scores[measure.name] = found / len(gold_set)
        elif measure.family == "docR" and len(gold_set) == 1:
            scores[measure.name] = float(found)
        elif measure.family == "docFR" and len(gold_set) >= 2:
            scores[measure.name] = float(found == len(gold_set))
    ndcg = {m.name: f"nDCG@{m.cutoff}" for m in measures if m.family == "docNDCG"}
    if ndcg:
        by_query = {"q": dict.fromkeys(ndcg, 0.0)}
        run = {"q": _pseudo_scores(list(dict.fromkeys(ranking)))} if ranking else {}
        _ir_calc({"q": dict.fromkeys(gold_set, 1)}, run, ndcg, by_query)
        scores.update(by_query["q"])
    return scores
