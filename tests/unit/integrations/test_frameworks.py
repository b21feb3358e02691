"""The LlamaIndex and LangChain retrievers, the node postprocessor and the document
compressor run inside each framework's own pipeline (a query engine, a runnable chain) over
real documents, retrieval only, and keep exact offsets and pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscan.bench.datasets import load_squad
from longscan.documents import Document
from longscan.readers.files import read_file
from printed_pdf import page_chunks, write_pdf


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, novel_path: Path) -> tuple[Document, list]:
    chunks = page_chunks(novel_path.read_text(encoding="utf-8"), pages=8)
    path = tmp_path_factory.mktemp("pdf") / "alice.pdf"
    write_pdf(path, chunks)
    return read_file(path), chunks


@pytest.fixture(scope="module")
def article(data_dir: Path) -> tuple[Document, list]:
    squad = load_squad(data_dir)[0]
    text = "\n\n".join(p.context for p in squad.paragraphs)
    questions = [(q.question, q.answers[0][0]) for p in squad.paragraphs for q in p.questions]
    return Document(squad.title, text), questions[:20]


def test_a_llamaindex_query_engine_returns_cited_nodes(report, article, monkeypatch) -> None:
    from llama_index.core import Settings, get_response_synthesizer
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from longscan.integrations.llamaindex import LongscanRetriever

    # LlamaIndex's default LLM is OpenAI's, online; retrieval only needs none
    monkeypatch.setattr(Settings, "_llm", MockLLM())
    document, chunks = report
    retriever = LongscanRetriever([document], retriever="bm25-sentence", similarity_top_k=3)
    engine = RetrieverQueryEngine(  # the framework's engine; "no_text" answers without an LLM
        retriever=retriever,
        response_synthesizer=get_response_synthesizer(response_mode="no_text", llm=MockLLM()),
    )
    for page, chunk in enumerate(chunks, start=1):
        response = engine.query(max(chunk.split(". "), key=len)[:200])
        top = response.source_nodes[0]
        node = top.node
        assert document.text[node.start_char_idx : node.end_char_idx] == node.text
        assert node.metadata["page"] == page and node.metadata["where"] == f"p. {page}"
        assert top.score == max(n.score for n in response.source_nodes)
    scanner = LongscanRetriever([article[0]], similarity_top_k=5)  # the shipped scanner
    found = sum(
        any(answer in n.node.text for n in scanner.retrieve(question))
        for question, answer in article[1]
    )
    assert found >= 15, found  # of 20 real SQuAD questions, the answer among 5 sentences


def test_a_langchain_chain_returns_cited_documents(report, article) -> None:
    from langchain_core.runnables import RunnableLambda

    from longscan.integrations.langchain import LongscanRetriever

    document, chunks = report
    retriever = LongscanRetriever(documents=[document], retriever="bm25-sentence", k=3)
    chain = retriever | RunnableLambda(lambda docs: [(d.metadata["page"], d) for d in docs])
    for page, chunk in enumerate(chunks, start=1):
        (top_page, top), *_ = chain.invoke(max(chunk.split(". "), key=len)[:200])
        start, end = top.metadata["start_char_idx"], top.metadata["end_char_idx"]
        assert document.text[start:end] == top.page_content
        assert top_page == page
    scanner = LongscanRetriever(documents=[article[0]], k=5)
    batch = scanner.batch([question for question, _ in article[1]])  # LangChain's own batching
    found = sum(
        any(answer in d.page_content for d in docs)
        for docs, (_, answer) in zip(batch, article[1], strict=True)
    )
    assert found >= 15, found


def test_a_llamaindex_postprocessor_keeps_the_evidence_of_the_users_own_nodes(
    article, monkeypatch
) -> None:
    """After LlamaIndex's own index and retriever (its sentence splitter's chunks), the
    scanner keeps sentences whose offsets index the source document."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core import Settings, SummaryIndex
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.node_parser import SentenceSplitter

    from longscan.integrations.llamaindex import LongscanNodePostprocessor

    monkeypatch.setattr(Settings, "_llm", MockLLM())
    document, questions = article
    source = LlamaDocument(text=document.text, id_="article")
    nodes = SentenceSplitter(chunk_size=256, chunk_overlap=0).get_nodes_from_documents([source])
    assert len(nodes) > 5
    engine = SummaryIndex(nodes).as_query_engine(  # its retriever hands over every node
        node_postprocessors=[LongscanNodePostprocessor(top_n=5)],
        response_mode="no_text",
        llm=MockLLM(),
    )
    found = 0
    for question, answer in questions:
        kept = engine.query(question).source_nodes
        assert len(kept) == 5
        for hit in kept:
            node = hit.node
            assert document.text[node.start_char_idx : node.end_char_idx] == node.text
            assert node.metadata["offsets_into"] == "source" and node.ref_doc_id == "article"
        found += any(answer in hit.node.text for hit in kept)
    assert found >= 15, found  # of 20 real SQuAD questions, the answer among 5 sentences


def test_a_langchain_compressor_keeps_the_evidence_of_the_users_own_documents(article) -> None:
    """After a LangChain retriever (an in-memory vector store over paragraphs that record
    their start_index), the scanner keeps sentences placed in the source text."""
    from langchain_core.documents import Document as LangChainDocument
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    from longscan.integrations.langchain import LongscanCompressor

    document, questions = article
    paragraphs, start = [], 0
    for paragraph in document.text.split("\n\n"):
        start = document.text.index(paragraph, start)
        paragraphs.append(LangChainDocument(paragraph, metadata={"start_index": start}))
    store = InMemoryVectorStore.from_documents(paragraphs, DeterministicFakeEmbedding(size=16))
    compressor = LongscanCompressor(top_n=5)
    chain = RunnableParallel(
        documents=store.as_retriever(search_kwargs={"k": len(paragraphs)}),
        query=RunnablePassthrough(),
    ) | RunnableLambda(lambda x: compressor.compress_documents(x["documents"], x["query"]))
    found = 0
    for question, answer in questions:
        kept = chain.invoke(question)
        assert len(kept) == 5
        for doc in kept:
            begin = doc.metadata["start_index"]
            assert document.text[begin : begin + len(doc.page_content)] == doc.page_content
        found += any(answer in doc.page_content for doc in kept)
    assert found >= 15, found
    assert compressor.compress_documents([], "Who?") == []
