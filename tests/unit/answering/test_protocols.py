"""Prompt assembly, citations and id parsing of the answer-level protocols (no LLM needed)."""

from __future__ import annotations

from longscan.answering.pipelines import format_evidence, in_document_order, parse_citations
from longscan.answering.tokens import count_tokens
from longscan.bench.builders import build_loong
from longscan.bench.qa import (
    assemble_loong_prompt,
    length_bucket,
    parse_document_ids,
    serialize_collection,
)
from longscan.documents import Document, Evidence


def test_loong_prompt_keeps_headers_template_and_order() -> None:
    item = build_loong(max_items=3)[2]  # a financial item
    prompt, included, skipped = assemble_loong_prompt(item, budget_tokens=10**9)
    assert not skipped and included == [d.id for d in item.documents]
    headers = [d.metadata["header"] for d in item.documents]
    assert all(h.startswith("《") and h.endswith("》") for h in headers)
    positions = [prompt.index(d.text) for d in item.documents]
    assert positions == sorted(positions)  # the item's (shuffled) order
    template = item.metadata["prompt_template"]
    assert prompt.startswith(template.split("{")[0]) and prompt.endswith(item.query)


def test_loong_skips_a_document_that_would_overflow_and_tries_the_next() -> None:
    item = next(i for i in build_loong() if len(i.documents) >= 3)
    by_size = sorted(item.documents, key=lambda d: count_tokens(d.text))
    big, others = by_size[-1], by_size[:-1]
    order = [*others[:-1], big, others[-1]]  # the biggest, then one more that must still fit
    fixed = count_tokens(
        item.metadata["prompt_template"].format(
            docs="", instruction=item.metadata["instruction"], question=item.query
        )
    )
    budget = fixed + sum(count_tokens(d.text) + 1 for d in others)  # everything but the biggest
    prompt, included, skipped = assemble_loong_prompt(item, budget, order)
    assert skipped == [big.id]
    assert included == [d.id for d in others[:-1]] + [others[-1].id]
    assert count_tokens(prompt) <= budget + 2 * len(others)  # the blank lines between documents


def test_evidence_goes_in_document_order_and_citations_map_to_offsets() -> None:
    documents = [Document("a", "Alpha one. Alpha two."), Document("b", "Beta one. Beta two.")]
    evidence = [
        Evidence("b", 10, 19, "Beta two.", 0.9, "sentence"),
        Evidence("a", 0, 10, "Alpha one.", 0.8, "sentence"),
        Evidence("b", 0, 9, "Beta one.", 0.7, "sentence"),
    ]
    ordered = in_document_order(evidence, documents)
    assert [(e.doc_id, e.start) for e in ordered] == [("a", 0), ("b", 0), ("b", 10)]
    assert format_evidence(ordered).splitlines()[1] == "[2] (b) Beta one."
    assert format_evidence(ordered[1:]).splitlines()[0] == "[1] Beta one."  # one document
    cited = parse_citations("Beta [3], see also [1, 2] and [2][9].", ordered)
    assert [(c.doc_id, c.start, c.end) for c in cited] == [("b", 10, 19), ("a", 0, 10), ("b", 0, 9)]
    assert all(documents[c.doc_id == "b"].text[c.start : c.end] == c.text for c in cited)


def test_document_ids_canonical_and_raw_rules() -> None:
    reply = "Documents 3, 3, 17, 0 and 2 (see 5)."
    assert parse_document_ids(reply, 3, valid={0, 2, 3, 5}) == [3, 0, 2]
    assert parse_document_ids(reply, 3) == [3, 17, 0]
    assert parse_document_ids("none", 5, valid={1}) == []


def test_collection_serialisation_numbers_documents_and_respects_the_budget() -> None:
    documents = [Document(f"d{i}", f"Paragraph {i} " + "word " * (50 * (i + 1))) for i in range(4)]
    text, shown = serialize_collection(documents, budget_tokens=200)
    assert text.startswith("[DocID=0] Paragraph 0") and shown[0] == "d0"
    assert count_tokens(text) <= 200 and 3 not in shown


def test_length_buckets_are_the_papers() -> None:
    assert [length_bucket(n) for n in (500, 8_000, 20_000, 300_000)] == [
        "1-8k",
        "8-16k",
        "16-32k",
        "256k+",
    ]


def test_longdoc_runner_scores_answers_and_counts_judge_failures(scripted, tmp_path) -> None:
    from longscan.bench.qa import run_longdoc_qa
    from longscan.retrievers import get_retriever
    from scripted_server import completion_body

    _, client = scripted([(200, completion_body("The answer is C"), 0)])
    run = run_longdoc_qa(client, "coursera", get_retriever("bm25-sentence"), max_items=3)
    golds = [r["reference"] for r in run.records]
    assert [r["choice_accuracy"] for r in run.records] == [float(g == "C") for g in golds]
    assert run.summary["judge_parse_failure_rate"] == 1.0 and run.summary["judge_accuracy"] is None
    assert run.usage["calls"] + run.usage["cache_hits"] == 6  # 3 answers, 3 judgements
    written = run.write(tmp_path)
    assert [p.suffix for p in written] == [".json", ".md", ".png"] and all(
        p.stat().st_size for p in written
    )


def test_localization_runner_reads_ids_by_both_rules(scripted) -> None:
    from longscan.bench.qa import run_localization
    from scripted_server import completion_body

    _, client = scripted([(200, completion_body("2, 999, 0"), 0)], context_tokens=8192)
    run = run_localization(client, "hotpotqa-collection", k=2, target_words=1_000, max_items=2)
    for record in run.records:
        assert record["raw"] == [2, 999]  # the raw rule keeps any integer
        assert len(record["canonical"]) == 2 and "invalid" not in "".join(record["canonical"])
    assert (
        run.summary["scores.docSR@2"] is not None
        and "first K unique valid ids" in run.summary["markdown"]
    )
