"""Reference retrievers that bound every result: random (floor) and oracle (ceiling)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from longscan.documents import Document
from longscan.items import GoldSpan, QAItem
from longscan.retrievers.base import Retriever, UnitKind, Units


class RandomRetriever(Retriever):
    """Uniformly random ranking, reproducible: seeded by (seed, query, documents)."""

    name: ClassVar[str] = "random"

    def __init__(self, unit: UnitKind = "sentence", seed: int = 0) -> None:
        self.unit = unit
        self.seed = seed

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        material = "\x1f".join([str(self.seed), query, *(d.content_hash for d in documents)])
        seed = int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).random(len(units))


class OracleRetriever(Retriever):
    """Ranks first the units that overlap the gold spans of the item being asked.

    An upper bound for evidence access: it knows the gold evidence of the given items,
    looked up by (query, document ids). Units overlapping more gold characters rank higher.
    """

    name: ClassVar[str] = "oracle"

    def __init__(self, items: Sequence[QAItem], unit: UnitKind = "sentence") -> None:
        self.unit = unit
        self._gold: dict[tuple[str, tuple[str, ...]], list[GoldSpan]] = {
            (item.query.strip(), tuple(d.id for d in item.documents)): item.gold_spans
            for item in items
        }

    def score_units(self, query: str, documents: Sequence[Document], units: Units) -> np.ndarray:
        key = (query, tuple(d.id for d in documents))
        if key not in self._gold:
            raise ValueError("the oracle only answers the items it was built with")
        scores = np.zeros(len(units))
        doc_ids = np.array([d.id for d in documents], dtype=object)[units.doc_index]
        for span in self._gold[key]:
            same_doc = doc_ids == span.doc_id
            overlap = np.minimum(units.spans[:, 1], span.end) - np.maximum(
                units.spans[:, 0], span.start
            )
            scores += np.where(same_doc, np.clip(overlap, 0, None), 0)
        return scores
