"""Evidence-access evaluation: gold mapping, word-budgeted, sentence- and document-level measures.

Typical use::

    from longscan.evaluation import evaluate, comparison_table, markdown_table

    results = [evaluate(retriever, items) for retriever in retrievers]
    rich.print(comparison_table(results))
"""

from __future__ import annotations

from longscan.evaluation.budgets import DEFAULT_BUDGETS, budget_evidence, budget_scores
from longscan.evaluation.evaluator import (
    DEFAULT_LENGTH_EDGES,
    DEFAULT_TOP_K,
    EvaluationResult,
    ItemRecord,
    LengthBuckets,
    evaluate,
    evidence_position,
    summarize,
)
from longscan.evaluation.gold import (
    contains_answer,
    covered_gold_spans,
    gold_documents,
    gold_sentences,
    gold_unit_labels,
    normalize_answer,
    overlap_labels,
    sentences_of_units,
)
from longscan.evaluation.measures import (
    DEFAULT_DOC_KS,
    DEFAULT_KS,
    FAMILIES,
    Measure,
    default_measures,
    document_ranking,
    document_scores,
    parse_measures,
    sentence_scores,
)
from longscan.evaluation.report import (
    comparison_table,
    markdown_table,
    plot_by_length,
    result_table,
    write_json,
)

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_DOC_KS",
    "DEFAULT_KS",
    "DEFAULT_LENGTH_EDGES",
    "DEFAULT_TOP_K",
    "FAMILIES",
    "EvaluationResult",
    "ItemRecord",
    "LengthBuckets",
    "Measure",
    "budget_evidence",
    "budget_scores",
    "comparison_table",
    "contains_answer",
    "covered_gold_spans",
    "default_measures",
    "document_ranking",
    "document_scores",
    "evaluate",
    "evidence_position",
    "gold_documents",
    "gold_sentences",
    "gold_unit_labels",
    "markdown_table",
    "normalize_answer",
    "overlap_labels",
    "parse_measures",
    "plot_by_length",
    "result_table",
    "sentence_scores",
    "sentences_of_units",
    "summarize",
    "write_json",
]
