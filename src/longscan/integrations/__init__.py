"""longscan's retrievers inside LlamaIndex and LangChain pipelines (optional extras
``[llamaindex]`` and ``[langchain]``): every node or document they return keeps its exact
character offsets and its page or section, so a pipeline's answer can still be cited."""

from __future__ import annotations

from typing import Any

from longscan.documents import Evidence
from longscan.pipeline import Pipeline
from longscan.retrievers.base import Retriever


def evidence_pipeline(retriever: str | Retriever, top_k: int) -> Pipeline:
    """The evidence step of longscan's pipeline for a retriever by name (``scanner``,
    ``bm25-sentence``, ``scanner:DIR`` ...) or as given: the frameworks answer themselves,
    and judge for themselves whether to. Units come as ranked, ``top_k`` of them, unwidened
    and without a word budget: a framework's retriever returns ``k`` nodes."""
    return Pipeline(retriever, None, top_k=top_k, budget_words=None, paragraph=False, abstain=False)


def evidence_metadata(evidence: Evidence) -> dict[str, Any]:
    """What a framework's node or document carries of a piece of evidence besides its text."""
    return {
        "doc_id": evidence.doc_id,
        "start_char_idx": evidence.start,
        "end_char_idx": evidence.end,
        "unit": evidence.unit,
        "page": evidence.page,
        "section": " › ".join(evidence.section),
        "where": evidence.where,
        "score": evidence.score,
    }
