"""longscan inside LlamaIndex (extra ``[llamaindex]``): a ``BaseRetriever`` over whole
documents, and a node postprocessor that reads the nodes the user's own retriever found and
keeps their evidence sentences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeRelationship, NodeWithScore, QueryBundle, TextNode

from longscan.documents import Document, Evidence
from longscan.integrations import evidence_metadata, evidence_pipeline
from longscan.retrievers.base import Retriever


def as_document(item: Document | BaseNode) -> Document:
    """A longscan ``Document`` of a LlamaIndex document or node (its id and its text)."""
    if isinstance(item, Document):
        return item
    return Document(item.node_id, item.get_content())


def _node(evidence: Evidence, offset: int, extra: dict[str, Any]) -> TextNode:
    return TextNode(
        id_=f"{evidence.doc_id}:{evidence.start}-{evidence.end}",
        text=evidence.text,
        start_char_idx=offset + evidence.start,
        end_char_idx=offset + evidence.end,
        metadata={**extra, **evidence_metadata(evidence)},
    )


class LongscanRetriever(BaseRetriever):
    """Ranks the sentences of ``documents`` (LlamaIndex documents or nodes, or longscan
    ``Document``s) for each query and returns ``TextNode``s whose
    ``start_char_idx``/``end_char_idx`` index the document's text, with the page or section
    in their metadata."""

    def __init__(
        self,
        documents: Sequence[Document | BaseNode],
        retriever: str | Retriever = "scanner",
        similarity_top_k: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.documents = [as_document(item) for item in documents]
        self.pipeline = evidence_pipeline(retriever, similarity_top_k)
        self.similarity_top_k = similarity_top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.pipeline.find(query_bundle.query_str, self.documents).evidence
        return [NodeWithScore(node=_node(item, 0, {}), score=item.score) for item in found]


class LongscanNodePostprocessor(BaseNodePostprocessor):
    """Reads the nodes another retriever found with a longscan retriever (the scanner by
    default) and returns their ``top_n`` best sentences, best first.

    The nodes are read in the order of their source text where they know it (a scan scores
    each sentence after what precedes it), else as given. Each sentence keeps its node's
    metadata and source; its ``start_char_idx``/``end_char_idx`` index the source document
    when the node knows its own place there (LlamaIndex's node parsers record it), else the
    node's text, and ``metadata["node_id"]`` names the node it came from.
    """

    retriever: Any = Field(default="scanner", description="A longscan retriever or its name.")
    top_n: int = Field(default=5, description="Sentences kept.")
    _pipeline: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._pipeline = evidence_pipeline(self.retriever, self.top_n)  # loads once

    @classmethod
    def class_name(cls) -> str:
        return "LongscanNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("the longscan postprocessor needs the query")
        if not nodes:
            return []
        ordered = sorted(
            (item.node for item in nodes),
            key=lambda node: (node.ref_doc_id or "", node.start_char_idx or 0),
        )
        by_id = {node.node_id: node for node in ordered}
        documents = [Document(node.node_id, node.get_content()) for node in ordered]
        found = self._pipeline.find(query_bundle.query_str, documents).evidence
        kept = []
        for item in found:
            source = by_id[item.doc_id]
            new = _node(item, source.start_char_idx or 0, dict(source.metadata))
            new.metadata["node_id"] = source.node_id
            new.metadata["offsets_into"] = "source" if source.start_char_idx is not None else "node"
            if source.source_node is not None:
                new.relationships[NodeRelationship.SOURCE] = source.source_node
            kept.append(NodeWithScore(node=new, score=item.score))
        return kept
