"""Word-budgeted evidence metrics: what a reader sees in the first B words of evidence.

Sentence and chunk retrievers return units of very different sizes, so "top 10 units" is not a
fair comparison: ten 300-word chunks are 3,000 words of reading, ten sentences perhaps 200.
A word budget fixes the reading cost instead. The ranked units are taken in order until B
words (white-space tokens, ``str.split``) are used; the unit that overflows keeps only its
first ``B - used`` words, and its character end moves to the end of its last kept word, so
the cut piece still points exactly into the document.

With T the item's targets (its gold spans, or its gold documents when it has only those) and
``covered(t)`` = some budgeted unit overlaps t (same document, at least one character):

* ``hit@B = [∃ t ∈ T: covered(t)]``
* ``SR@B = |{t ∈ T: covered(t)}| / |T|``
* ``FR@B = [∀ t ∈ T: covered(t)]``
* ``ahit@B = [∃ budgeted unit u, answer a: normalised a occurs in u's kept text]``, for items
  with reference answers but no gold spans. Matching unit by unit (not across the
  concatenation of unrelated units) keeps an answer from being assembled out of two pieces.
* ``aSR@B`` and ``aFR@B``: the same match for each part of an answer made of parts (a
  Loong answer lists companies or paper titles: ``item.metadata["answer_parts"]``), as the
  fraction of parts found and whether all are. An answer of one part (any of
  ``item.answers``) gives ``aSR = aFR = ahit``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

import numpy as np

from longscan.documents import Evidence
from longscan.evaluation.gold import contains_answer, covered_gold_spans, normalize_answer
from longscan.evaluation.measures import Measure
from longscan.items import QAItem

DEFAULT_BUDGETS = (100, 300, 1000, 2000)
PART_FAMILIES = frozenset({"aSR", "aFR"})  # scored over an answer's parts
ANSWER_FAMILIES = frozenset({"ahit"}) | PART_FAMILIES

_WORD = re.compile(r"\S+")


def budget_evidence(evidence: Iterable[Evidence], budget: int) -> list[Evidence]:
    """The ranked evidence that fits in ``budget`` words, the overflowing unit cut to fit.

    A unit of n words taken after ``used`` words is kept whole when ``used + n ≤ budget``;
    otherwise it keeps its first ``budget - used`` words, with ``end = start + e`` where e is
    the end offset of its last kept word in ``text``, and the walk stops.

    Raises:
        ValueError: ``budget`` is not a positive integer.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"the word budget must be a positive integer, got {budget!r}")
    kept: list[Evidence] = []
    used = 0
    for unit in evidence:
        if used == budget:
            break
        words = list(_WORD.finditer(unit.text))
        if used + len(words) <= budget:
            kept.append(unit)
            used += len(words)
            continue
        cut = words[budget - used - 1].end()
        kept.append(dataclasses.replace(unit, end=unit.start + cut, text=unit.text[:cut]))
        break
    return kept


def _covered_targets(item: QAItem, units: Sequence[Evidence]) -> np.ndarray:
    """Coverage of the item's targets: gold spans, else gold documents."""
    if item.gold_spans:
        return covered_gold_spans(item, units)
    seen = {unit.doc_id for unit in units}
    return np.array([doc_id in seen for doc_id in dict.fromkeys(item.gold_doc_ids)], dtype=bool)


def has_targets(item: QAItem) -> bool:
    """Whether ``hit``/``SR``/``FR`` apply: the item has gold spans or gold documents."""
    return bool(item.gold_spans or item.gold_doc_ids)


def answer_only(item: QAItem) -> bool:
    """Whether ``ahit`` applies: no gold spans, but a non-empty normalised reference answer."""
    return not item.gold_spans and any(normalize_answer(answer) for answer in item.answers)


def answer_parts(item: QAItem) -> list[list[str]]:
    """The parts an answer must show, each as its accepted wordings: the item's listed
    parts (none for an answer that lists nothing), else one part that any reference answer
    fills."""
    if "answer_parts" in item.metadata:
        return [[part] for part in item.metadata["answer_parts"]]
    return [list(item.answers)]


def budget_scores(
    item: QAItem, evidence: Sequence[Evidence], measures: Sequence[Measure]
) -> dict[str, float]:
    """Budget-level measures of one item, only those that apply to it.

    Returns:
        Measure name -> value. ``hit``/``SR``/``FR`` appear when the item has targets,
        ``ahit`` when it has answers but no gold spans, ``aSR``/``aFR`` when its answer
        also has parts.

    Raises:
        ValueError: a measure is not budget-level.
    """
    if any(measure.level != "budget" for measure in measures):
        raise ValueError("budget_scores takes budget-level measures only (hit, SR, FR, ahit, ...)")
    targets, answers, parts = has_targets(item), answer_only(item), answer_parts(item)
    wanted = [
        m
        for m in measures
        if (answers if m.family in ANSWER_FAMILIES else targets)
        and (parts or m.family not in PART_FAMILIES)
    ]
    values: dict[tuple[str, int], float] = {}
    for budget in dict.fromkeys(measure.cutoff for measure in wanted):
        units = budget_evidence(evidence, budget)
        families = {measure.family for measure in wanted if measure.cutoff == budget}
        if families - ANSWER_FAMILIES:
            covered = _covered_targets(item, units)
            values[("hit", budget)] = float(covered.any())
            values[("SR", budget)] = float(covered.mean())
            values[("FR", budget)] = float(covered.all())
        if "ahit" in families:
            found = any(contains_answer(unit.text, item.answers) for unit in units)
            values[("ahit", budget)] = float(found)
        if families & PART_FAMILIES:
            shown = np.array([any(contains_answer(u.text, part) for u in units) for part in parts])
            values[("aSR", budget)] = float(shown.mean())
            values[("aFR", budget)] = float(shown.all())
    return {measure.name: values[(measure.family, measure.cutoff)] for measure in wanted}
