"""Run a retriever over benchmark items and score every metric family that applies.

One ``evaluate`` call retrieves once per item and scores the same ranking at every level
(budgeted words, sentences, documents), so the families are comparable and the retrieval is
timed exactly once. Results keep per-item records; means are recomputed from them overall, by
document length and by evidence position, because long-document QA fails first on long inputs
and on evidence buried in the middle, and an overall mean hides both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from longscan.evaluation.budgets import DEFAULT_BUDGETS, budget_scores
from longscan.evaluation.gold import gold_documents, gold_sentences, sentences_of_units
from longscan.evaluation.measures import (
    DEFAULT_DOC_KS,
    DEFAULT_KS,
    Measure,
    default_measures,
    document_ranking,
    document_scores,
    of_level,
    parse_measures,
    sentence_scores,
)
from longscan.items import QAItem
from longscan.progress import track
from longscan.retrievers.base import Retriever
from longscan.selection import with_table_context

DEFAULT_LENGTH_EDGES = (5_000, 20_000, 50_000, 100_000)
DEFAULT_TOP_K = 2_000
RUN_DEPTH = 1_000  # sentences of each ranking kept for a TREC run file
POSITIONS = ("first", "middle", "last", "spread")
POSITION_KEY = "evidence_position"

ITEMS = "items"
SECONDS_PER_DOC = "s/doc"
WORDS_PER_SECOND = "words/s"


def _thousands(words: int) -> str:
    return f"{words // 1000}k" if words % 1000 == 0 else f"{words:,}"


@dataclass(frozen=True)
class LengthBuckets:
    """Document-length buckets in words, cut at ``edges``.

    Edges ``e_1 < ... < e_m`` make m + 1 buckets: ``words < e_1``, ``e_i ≤ words < e_{i+1}``,
    and ``words ≥ e_m``; labelled ``<5k``, ``5k-20k``, ..., ``>=100k``.
    """

    edges: tuple[int, ...] = DEFAULT_LENGTH_EDGES

    def __post_init__(self) -> None:
        edges = tuple(self.edges)
        if any(isinstance(e, bool) or not isinstance(e, int) or e < 1 for e in edges):
            raise ValueError(f"length edges must be positive integers, got {edges}")
        if any(a >= b for a, b in zip(edges, edges[1:], strict=False)):
            raise ValueError(f"length edges must increase strictly, got {edges}")
        object.__setattr__(self, "edges", edges)

    @property
    def labels(self) -> list[str]:
        if not self.edges:
            return ["all"]
        names = [_thousands(edge) for edge in self.edges]
        middle = [f"{a}-{b}" for a, b in zip(names, names[1:], strict=False)]
        return [f"<{names[0]}", *middle, f">={names[-1]}"]

    def label(self, words: int) -> str:
        """The bucket of a document ``words`` long."""
        return self.labels[sum(words >= edge for edge in self.edges)]


def evidence_position(item: QAItem) -> str | None:
    """Where the item's evidence sits: ``first``, ``middle`` or ``last`` third, or ``spread``.

    ``item.metadata["evidence_position"]`` wins when present, as a label or as a relative
    position in ``[0, 1]``. Otherwise each gold span gets ``p = start / len(document.text)``
    and the third ``min(floor(3p), 2)``; the item is in that third when all its spans agree,
    ``spread`` when they do not, and ``None`` (not bucketed) without gold spans.

    Raises:
        ValueError: the metadata value is neither a known label nor a number in ``[0, 1]``.
    """
    given = item.metadata.get(POSITION_KEY)
    if given is not None:
        if isinstance(given, str) and given in POSITIONS:
            return given
        if isinstance(given, int | float) and not isinstance(given, bool) and 0 <= given <= 1:
            return POSITIONS[min(int(3 * given), 2)]
        raise ValueError(
            f"{item.id}: metadata[{POSITION_KEY!r}] = {given!r}; expected one of "
            f"{POSITIONS} or a relative position in [0, 1]"
        )
    thirds = {
        POSITIONS[min(3 * span.start // max(len(item.document(span.doc_id).text), 1), 2)]
        for span in item.gold_spans
    }
    if not thirds:
        return None
    return thirds.pop() if len(thirds) == 1 else "spread"


@dataclass
class ItemRecord:
    """The scores and timing of one item.

    Attributes:
        item_id: ``QAItem.id``.
        words: Words in all the item's documents.
        documents: Number of documents searched.
        length_bucket: Label of ``words`` in the result's ``LengthBuckets``.
        position: ``evidence_position`` of the item, or ``None``.
        seconds: Wall-clock time of the one ``retrieve`` call.
        units: Number of evidence units returned.
        scores: Measure name -> value, for the measures that apply to this item.
    """

    item_id: str
    words: int
    documents: int
    length_bucket: str
    position: str | None
    seconds: float
    units: int
    scores: dict[str, float] = field(default_factory=dict)


def summarize(records: Sequence[ItemRecord], measures: Sequence[str]) -> dict[str, float]:
    """Means over a group of records, plus its size and speed.

    Each measure is averaged over the records it applies to (those that hold it), so a measure
    that applies to no record is absent rather than 0. ``s/doc = Σ seconds / Σ documents`` and
    ``words/s = Σ words / Σ seconds`` are throughput ratios, not means of per-item ratios.
    """
    summary: dict[str, float] = {ITEMS: float(len(records))}
    for name in measures:
        values = [record.scores[name] for record in records if name in record.scores]
        if values:
            summary[name] = sum(values) / len(values)
    seconds = sum(record.seconds for record in records)
    documents = sum(record.documents for record in records)
    if documents:
        summary[SECONDS_PER_DOC] = seconds / documents
    if seconds > 0:
        summary[WORDS_PER_SECOND] = sum(record.words for record in records) / seconds
    return summary


@dataclass
class EvaluationResult:
    """One retriever on one set of items: per-item records and their aggregates.

    Attributes:
        retriever: The retriever's name.
        unit: ``"sentence"`` or ``"chunk"``.
        measures: Names of the measures asked for, in order.
        length_edges: Edges of the length buckets, in words.
        records: One record per item, in the items' order.
        rankings: Item id -> the sentences ranked (``(doc_id, sentence index)``, best
            first, at most ``RUN_DEPTH``): what a TREC run file holds. Kept in memory only.
    """

    retriever: str
    unit: str
    measures: list[str]
    length_edges: tuple[int, ...]
    records: list[ItemRecord]
    rankings: dict[str, list[tuple[str, int]]] = field(default_factory=dict, repr=False)

    @property
    def buckets(self) -> LengthBuckets:
        return LengthBuckets(self.length_edges)

    @property
    def overall(self) -> dict[str, float]:
        return summarize(self.records, self.measures)

    def _grouped(self, key: str, order: Iterable[str]) -> dict[str, dict[str, float]]:
        groups = {
            name: [record for record in self.records if getattr(record, key) == name]
            for name in order
        }
        return {name: summarize(group, self.measures) for name, group in groups.items() if group}

    @property
    def by_length(self) -> dict[str, dict[str, float]]:
        """Summary per non-empty length bucket, shortest first."""
        return self._grouped("length_bucket", self.buckets.labels)

    @property
    def by_position(self) -> dict[str, dict[str, float]]:
        """Summary per non-empty evidence position (``POSITIONS`` order)."""
        return self._grouped("position", POSITIONS)

    def to_dict(self) -> dict[str, Any]:
        """Records and every aggregate, as plain JSON types."""
        return {
            "retriever": self.retriever,
            "unit": self.unit,
            "measures": list(self.measures),
            "length_edges": list(self.length_edges),
            "overall": self.overall,
            "by_length": self.by_length,
            "by_position": self.by_position,
            "records": [asdict(record) for record in self.records],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationResult:
        """Rebuild a result from ``to_dict`` output; aggregates are recomputed from records."""
        return cls(
            retriever=data["retriever"],
            unit=data["unit"],
            measures=[measure.name for measure in parse_measures(data["measures"])],
            length_edges=tuple(data["length_edges"]),
            records=[ItemRecord(**record) for record in data["records"]],
        )


def evaluate(
    retriever: Retriever,
    items: Iterable[QAItem],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    ks: Sequence[int] = DEFAULT_KS,
    doc_ks: Sequence[int] = DEFAULT_DOC_KS,
    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    top_k: int | None = DEFAULT_TOP_K,
    progress: bool = True,
    table_context: bool = False,
) -> EvaluationResult:
    """Retrieve for every item once and score every measure family that applies to it.

    Per item: budget measures (``hit``/``SR``/``FR`` with gold spans or gold documents,
    ``ahit`` with answers only); sentence measures with gold spans, all items scored in one
    ir-measures call; document measures when the item searches two or more documents (with
    one, the document ranking is trivially right and would inflate the means).

    Args:
        retriever: Any ``Retriever``.
        items: Benchmark items with unique ids.
        budgets: Word budgets B of ``hit@B``, ``SR@B``, ``FR@B``, ``ahit@B``.
        ks: Sentence cutoffs k of ``R@k``, ``P@k``, ``nDCG@k``.
        doc_ks: Document cutoffs K of ``docSR@K`` and ``docFR@K`` (``docR@1`` always).
        length_edges: Edges of the document-length buckets, in words.
        top_k: Units to retrieve per item; the default 2,000 covers the largest default budget
            and k with room to spare. ``None`` ranks every unit.
        progress: Show a progress bar.
        table_context: The budget measures read each table row after the units that say
            what it means (``selection.with_table_context``), counting their words: the
            evidence an answerer is shown. Rankings (``R@k``, documents) are unchanged.

    Raises:
        ValueError: duplicate item ids, a bad cutoff or edge, or a bad ``top_k``.
    """
    items = list(items)
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("item ids must be unique: per-item scores are keyed by id")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    measures = default_measures(budgets, ks, doc_ks)
    buckets = LengthBuckets(tuple(length_edges))
    budget_level, document_level = of_level(measures, "budget"), of_level(measures, "document")
    sentence_level = of_level(measures, "sentence")
    deepest = max((measure.cutoff for measure in sentence_level), default=0)
    name = getattr(retriever, "name", type(retriever).__name__)

    records: list[ItemRecord] = []
    gold: dict[str, list[tuple[str, int]]] = {}
    ranked: dict[str, list[tuple[str, int]]] = {}
    rankings: dict[str, list[tuple[str, int]]] = {}
    for item in track(items, f"evaluating {name}", enabled=progress):
        started = time.perf_counter()
        evidence = retriever.retrieve(item.query, item.documents, top_k=top_k)
        seconds = time.perf_counter() - started
        read = with_table_context(evidence, item.documents) if table_context else evidence
        scores = budget_scores(item, read, budget_level)
        if len(item.documents) > 1:
            ranking = document_ranking(evidence)
            scores.update(document_scores(ranking, gold_documents(item), document_level))
        depth = max(RUN_DEPTH, deepest)
        rankings[item.id] = sentences_of_units(evidence, item.documents, limit=depth)
        if sentence_level and item.gold_spans:
            gold[item.id] = gold_sentences(item)
            ranked[item.id] = rankings[item.id][:deepest]
        words = item.total_words
        records.append(
            ItemRecord(
                item_id=item.id,
                words=words,
                documents=len(item.documents),
                length_bucket=buckets.label(words),
                position=evidence_position(item),
                seconds=seconds,
                units=len(evidence),
                scores=scores,
            )
        )
    per_query = sentence_scores(gold, ranked, sentence_level)
    for record in records:
        record.scores.update(per_query.get(record.item_id, {}))
        record.scores = _in_order(record.scores, measures)
    return EvaluationResult(
        retriever=name,
        unit=getattr(retriever, "unit", "sentence"),
        measures=[measure.name for measure in measures],
        length_edges=buckets.edges,
        records=records,
        rankings=rankings,
    )


def _in_order(scores: Mapping[str, float], measures: Sequence[Measure]) -> dict[str, float]:
    return {measure.name: scores[measure.name] for measure in measures if measure.name in scores}
