"""The LlamaIndex and LangChain retrievers run inside each framework's own pipeline (a
query engine, a runnable chain) over real documents, retrieval only, and keep exact offsets
and pages."""

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
    retriever = LongscanRetriever([document], retriever="bm25-sentence", top_k=3)
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
    scanner = LongscanRetriever([article[0]], top_k=5)  # the default: the shipped scanner
    found = sum(
        any(answer in n.node.text for n in scanner.retrieve(question))
        for question, answer in article[1]
    )
    assert found >= 15, found  # of 20 real SQuAD questions, the answer among 5 sentences


def test_a_langchain_chain_returns_cited_documents(report, article) -> None:
    from langchain_core.runnables import RunnableLambda

    from longscan.integrations.langchain import LongscanRetriever

    document, chunks = report
    retriever = LongscanRetriever(documents=[document], retriever="bm25-sentence", top_k=3)
    chain = retriever | RunnableLambda(lambda docs: [(d.metadata["page"], d) for d in docs])
    for page, chunk in enumerate(chunks, start=1):
        (top_page, top), *_ = chain.invoke(max(chunk.split(". "), key=len)[:200])
        start, end = top.metadata["start_char_idx"], top.metadata["end_char_idx"]
        assert document.text[start:end] == top.page_content
        assert top_page == page
    scanner = LongscanRetriever(documents=[article[0]], top_k=5)
    batch = scanner.batch([question for question, _ in article[1]])  # LangChain's own batching
    found = sum(
        any(answer in d.page_content for d in docs)
        for docs, (_, answer) in zip(batch, article[1], strict=True)
    )
    assert found >= 15, found
