"""A LangChain ``BaseRetriever`` over longscan (extra ``[langchain]``)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LangChainDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from longscan.integrations import evidence_metadata, evidence_pipeline


class LongscanRetriever(BaseRetriever):
    """Ranks the sentences of ``documents`` (longscan ``Document``s) for each query and
    returns LangChain ``Document``s with the offsets, page and section in their metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Any] = Field(description="longscan Documents to search.")
    retriever: Any = Field(default="scanner", description="A retriever or its name.")
    top_k: int = 5
    _resolved: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        # a scanner loads once, not per query
        self._resolved = evidence_pipeline(self.retriever, self.top_k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LangChainDocument]:
        found = self._resolved.find(query, self.documents).evidence
        return [
            LangChainDocument(page_content=item.text, metadata=evidence_metadata(item))
            for item in found
        ]
