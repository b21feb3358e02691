"""A LlamaIndex ``BaseRetriever`` over longscan (extra ``[llamaindex]``)."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from longscan.documents import Document
from longscan.integrations import evidence_metadata, evidence_pipeline
from longscan.retrievers.base import Retriever


class LongscanRetriever(BaseRetriever):
    """Ranks the sentences of ``documents`` for each query with a longscan retriever and
    returns them as ``TextNode``s whose ``start_char_idx``/``end_char_idx`` index the
    document's text, with the page or section in their metadata."""

    def __init__(
        self,
        documents: Sequence[Document],
        retriever: str | Retriever = "scanner",
        top_k: int = 5,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)
        self.documents = list(documents)
        self.pipeline = evidence_pipeline(retriever, top_k)
        self.top_k = top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.pipeline.find(query_bundle.query_str, self.documents).evidence
        return [
            NodeWithScore(
                node=TextNode(
                    id_=f"{item.doc_id}:{item.start}-{item.end}",
                    text=item.text,
                    start_char_idx=item.start,
                    end_char_idx=item.end,
                    metadata=evidence_metadata(item),
                ),
                score=item.score,
            )
            for item in found
        ]
