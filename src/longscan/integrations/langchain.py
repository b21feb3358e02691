"""longscan inside LangChain (extra ``[langchain]``): a ``BaseRetriever`` over whole
documents, and a document compressor that reads the documents the user's own retriever
found and keeps their evidence sentences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.documents import Document as LangChainDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from longscan.documents import Document
from longscan.integrations import evidence_metadata, evidence_pipeline


def as_document(item: Document | LangChainDocument, position: int) -> Document:
    """A longscan ``Document`` of a LangChain document (its id, else its position)."""
    if isinstance(item, Document):
        return item
    return Document(item.id or f"document-{position}", item.page_content)


def source_order(documents: Sequence[LangChainDocument]) -> list[int]:
    """Positions of ``documents`` in the order of their source text when every one records
    its ``start_index`` (and ``source``), else as given."""
    starts = [document.metadata.get("start_index") for document in documents]
    if not all(isinstance(start, int) for start in starts):
        return list(range(len(documents)))
    return sorted(
        range(len(documents)),
        key=lambda n: (str(documents[n].metadata.get("source", "")), starts[n]),
    )


class LongscanRetriever(BaseRetriever):
    """Ranks the sentences of ``documents`` (LangChain or longscan documents) for each query
    and returns LangChain ``Document``s with the offsets, page and section in their metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Any] = Field(description="LangChain or longscan documents to search.")
    retriever: Any = Field(default="scanner", description="A retriever or its name.")
    k: int = Field(default=5, description="Sentences returned.")
    _resolved: Any = PrivateAttr(default=None)
    _read: list[Document] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        # a scanner loads once, not per query
        self._resolved = evidence_pipeline(self.retriever, self.k)
        self._read = [as_document(item, n) for n, item in enumerate(self.documents)]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LangChainDocument]:
        found = self._resolved.find(query, self._read).evidence
        return [
            LangChainDocument(page_content=item.text, metadata=evidence_metadata(item))
            for item in found
        ]


class LongscanCompressor(BaseDocumentCompressor):
    """Reads the documents another retriever found with a longscan retriever (the scanner
    by default) and returns their ``top_n`` best sentences, best first, for LangChain's
    ``ContextualCompressionRetriever`` or any chain.

    The documents are read in the order of their source text where a text splitter recorded
    it (``source`` and ``start_index``; a scan scores each sentence after what precedes it),
    else as given. Each sentence keeps its document's metadata; ``start_char_idx`` and
    ``end_char_idx`` index the document's ``page_content``, and where the document records
    its ``start_index`` in its source, ``start_index`` is the sentence's own there.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any = Field(default="scanner", description="A longscan retriever or its name.")
    top_n: int = Field(default=5, description="Sentences kept.")
    _resolved: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._resolved = evidence_pipeline(self.retriever, self.top_n)  # loads once

    def compress_documents(
        self,
        documents: Sequence[LangChainDocument],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[LangChainDocument]:
        if not documents:
            return []
        by_id = {f"document-{n}": documents[n] for n in source_order(documents)}
        read = [Document(name, source.page_content) for name, source in by_id.items()]
        found = self._resolved.find(query, read).evidence
        kept = []
        for item in found:
            source = by_id[item.doc_id]
            metadata = {**source.metadata, **evidence_metadata(item)}
            metadata["doc_id"] = source.id
            if isinstance(source.metadata.get("start_index"), int):
                metadata["start_index"] = source.metadata["start_index"] + item.start
            kept.append(LangChainDocument(page_content=item.text, metadata=metadata))
        return kept
