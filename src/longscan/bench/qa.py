"""The seed papers' answer-level protocols, end to end, for any retriever or full context.

* ``run_loong``: Loong's prompt assembly (headers, its three templates, a document that
  would overflow the window is skipped and the next one tried, fixed-seed shuffling), the
  1-100 judge, Avg Score / Perfect Rate by level, by set and overall; or a RAG mode that
  replaces the documents by retrieved evidence at a word budget.
* ``run_longdoc_qa``: L-Eval-style long-document QA, free-form or multiple choice, judged
  yes/no and scored by F1 / choice accuracy, grouped by SPScanner's length buckets.
* ``run_localization``: EMB-S-style document localisation by an LLM over ``[DocID=n]``
  collections, scored with the retrievers' docSR/docR/docFR.

Every LLM call goes through ``LLMClient`` and its cache, so a rerun makes no calls.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from longscan.answering.answerers import ChatAnswerer
from longscan.answering.llm import LLMClient, LLMError
from longscan.answering.pipelines import Answer, answer_full_context, evidence_lines
from longscan.answering.prompts import LOCALIZE_DOCUMENTS, versions
from longscan.answering.tokens import count_tokens
from longscan.bench.builders import build_leval, build_loong
from longscan.bench.catalogue import build_benchmark
from longscan.bench.runner import make_retriever
from longscan.documents import Document, Evidence
from longscan.evaluation.answers import (
    choice_accuracy,
    judge_answers,
    sub_em,
    summarize_verdicts,
    token_f1,
)
from longscan.evaluation.measures import Measure, document_scores
from longscan.items import QAItem
from longscan.pipeline import Pipeline
from longscan.progress import track
from longscan.retrievers.base import Retriever
from longscan.selection import select

FULL_CONTEXT = "full-context"
LENGTH_BUCKETS = (  # SPScanner's buckets, in cl100k tokens
    (0, 8_000, "1-8k"),
    (8_000, 16_000, "8-16k"),
    (16_000, 32_000, "16-32k"),
    (32_000, 64_000, "32-64k"),
    (64_000, 128_000, "64-128k"),
    (128_000, 256_000, "128-256k"),
    (256_000, float("inf"), "256k+"),
)
LOONG_LEVELS = {1: "Spotlight Locating", 2: "Comparison", 3: "Clustering", 4: "Chain of Reasoning"}


@dataclass
class QARun:
    """One benchmark run: per-item records, summaries, cost and the settings that made it."""

    benchmark: str
    system: str
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    usage: dict[str, float]
    settings: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: Path) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{self.benchmark}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', self.system)}"
        path = out_dir / f"{stem}.json"
        path.write_text(json.dumps(asdict(self), indent=2, ensure_ascii=False, default=str))
        markdown = out_dir / f"{stem}.md"
        markdown.write_text(self.summary.get("markdown", "") + "\n")
        written = [path, markdown]
        if "by_bucket" in self.summary:  # accuracy against document length
            plot = out_dir / f"{stem}.png"
            _plot_by_bucket(self.summary["by_bucket"], f"{self.benchmark}: {self.system}", plot)
            written.append(plot)
        return written


def length_bucket(tokens: int) -> str:
    return next(name for low, high, name in LENGTH_BUCKETS if low <= tokens < high)


def evidence_documents(
    retriever: Retriever, query: str, documents: Sequence[Document], budget_words: int
) -> list[Document]:
    """Each document cut down to its retrieved evidence (header kept, reading order), the
    budget shared by all: Loong's RAG setting with any retriever. A table row is followed by
    its title and column header in braces, as ``format_evidence`` shows it to the answerer."""
    ranked = retriever.retrieve(query, documents)
    chosen = select(ranked, documents, budget_words=budget_words, order="document")
    by_document: dict[str, list[Evidence]] = defaultdict(list)
    for item in chosen:
        by_document[item.doc_id].append(item)
    cut = []
    for document in documents:
        if evidence := by_document.get(document.id):
            lines = evidence_lines(evidence, [document])
            header = document.metadata.get("header", document.id)
            cut.append(Document(document.id, header + "\n" + "\n".join(lines)))
    return cut


# ------------------------------------------------------------------------------ Loong


def assemble_loong_prompt(
    item: QAItem,
    budget_tokens: int,
    documents: Sequence[Document] | None = None,
    count: Callable[[str], int] = count_tokens,
) -> tuple[str, list[str], list[str]]:
    """Loong's prompt for ``item``: its template with the documents (each already starting
    with its header) joined by blank lines, in the item's order.

    A document that would push the prompt past ``budget_tokens`` (counted by ``count``: the
    model's tokenizer, ``LLMClient.count_tokens``; cl100k by default) is skipped and the next
    one tried, as Loong does. Returns the prompt, the included and the skipped ids.
    """
    template = item.metadata["prompt_template"]
    instruction = item.metadata.get("instruction", "")
    used = count(template.format(docs="", instruction=instruction, question=item.query))
    included: list[Document] = []
    skipped: list[str] = []
    for document in documents if documents is not None else item.documents:
        tokens = count(document.text) + 1
        if used + tokens > budget_tokens:
            skipped.append(document.id)
            continue
        included.append(document)
        used += tokens
    docs = "\n\n".join(document.text for document in included)
    prompt = template.format(docs=docs, instruction=instruction, question=item.query)
    return prompt, [d.id for d in included], skipped


def _loong_markdown(system: str, records: Sequence[dict[str, Any]]) -> str:
    """The paper's layout: Avg Score / Perfect Rate per level and overall; then per set."""

    def cell(rows: Sequence[dict[str, Any]]) -> str:
        scores = [r["score"] for r in rows if r["score"] is not None]
        if not scores:
            return "– / –"
        perfect = sum(s >= 100 for s in scores) / len(scores)
        return f"{sum(scores) / len(scores):.2f} / {perfect:.2f}"

    levels = sorted({r["level"] for r in records})
    sets = sorted({r["set"] for r in records})
    head = " | ".join(
        f"{LOONG_LEVELS.get(level, level)} (n={sum(r['level'] == level for r in records)})"
        for level in levels
    )
    lines = [
        f"| system | {head} | Overall (n={len(records)}) |",
        "| :--- |" + " ---: |" * (len(levels) + 1),
        f"| {system} | "
        + " | ".join(cell([r for r in records if r["level"] == level]) for level in levels)
        + f" | {cell(records)} |",
        "",
        "| system | "
        + " | ".join(f"Set {s} (n={sum(r['set'] == s for r in records)})" for s in sets)
        + " |",
        "| :--- |" + " ---: |" * len(sets),
        f"| {system} | "
        + " | ".join(cell([r for r in records if r["set"] == s]) for s in sets)
        + " |",
    ]
    return "\n".join(lines)


def run_loong(
    client: LLMClient,
    retriever: Retriever | None = None,
    *,
    system: str | None = None,
    judge: LLMClient | None = None,
    budget_words: int = 1_000,
    max_items: int | None = None,
    seed: int = 0,
    data_dir: str | None = None,
) -> QARun:
    """Loong end to end: full context when ``retriever`` is None, else its RAG mode."""
    judge = judge or client
    window = client.config.context_tokens - client.config.max_tokens - 64
    items = build_loong(max_items=max_items, seed=seed, data_dir=data_dir)
    records, answers = [], []
    for item in track(items, "loong"):
        documents = (
            evidence_documents(
                retriever,
                item.query or item.metadata.get("instruction", ""),
                item.documents,
                budget_words,
            )
            if retriever is not None
            else item.documents
        )
        prompt, included, skipped = assemble_loong_prompt(
            item, window, documents, client.count_tokens
        )
        reply = client.chat([{"role": "user", "content": prompt}]).text
        answers.append(reply)
        records.append(
            {
                "id": item.id,
                "level": item.metadata["level"],
                "set": item.metadata["set"],
                "type": item.metadata["type"],
                "question": item.query,
                "reference": item.answers[0] if item.answers else "",
                "answer": reply,
                "prompt_tokens": client.count_tokens(prompt),
                "included": included,
                "skipped": skipped,
            }
        )
    questions = [
        f"{r['question']}\n{items[i].metadata.get('instruction', '')}".strip()
        for i, r in enumerate(records)
    ]
    verdicts = judge_answers(judge, "loong", questions, [r["reference"] for r in records], answers)
    for record, verdict in zip(records, verdicts, strict=True):
        record.update(score=verdict.score, judge_output=verdict.raw)
    name = system or (retriever.name if retriever is not None else FULL_CONTEXT)
    summary = summarize_verdicts(verdicts, perfect=100)
    summary["markdown"] = _loong_markdown(name, records) + (
        f"\n\nAvg Score / Perfect Rate over parsed judge outputs: {summary['parsed']} of "
        f"{summary['n']} parsed (parse-failure rate {summary['parse_failure_rate']:.2f})."
    )
    return QARun(
        "loong",
        name,
        records,
        summary,
        _usage(client, judge),
        _settings(client, budget_words=budget_words, seed=seed),
    )


# ---------------------------------------------------------------------- long-document QA


def answer_item(
    client: LLMClient,
    item: QAItem,
    retriever: Retriever | None,
    budget_words: int,
    window_tokens: int | None = None,
) -> Answer:
    """Retrieve-then-answer with ``retriever``, or the sliding-window full context."""
    if retriever is None:
        return answer_full_context(client, item.query, item.documents, window_tokens)
    answerer = ChatAnswerer(client, client.config.model)
    pipeline = Pipeline(
        retriever, answerer, top_k=None, budget_words=budget_words, paragraph=False, abstain=False
    )  # the units alone, as the seed papers hand them to their generators
    answer = pipeline.answer(item.query, item.documents)
    if answer.error is not None:  # a benchmark stops where its LLM does
        raise LLMError(answer.error)
    return answer


def run_longdoc_qa(
    client: LLMClient,
    task: str = "coursera",
    retriever: Retriever | None = None,
    *,
    system: str | None = None,
    judge: LLMClient | None = None,
    budget_words: int = 1_000,
    window_tokens: int | None = None,
    max_items: int | None = None,
    data_dir: str | None = None,
) -> QARun:
    """L-Eval long-document QA: judge accuracy and F1 (choice accuracy for multiple choice),
    overall and by SPScanner's length buckets."""
    judge = judge or client
    items = build_leval(task, max_items=max_items, data_dir=data_dir)
    multiple_choice = task == "coursera"
    lengths: dict[str, int] = {}
    records = []
    for item in track(items, f"leval {task}"):
        document = item.documents[0]
        if document.id not in lengths:
            lengths[document.id] = count_tokens(document.text)
        answer = answer_item(client, item, retriever, budget_words, window_tokens)
        reference = item.answers[0] if item.answers else ""
        records.append(
            {
                "id": item.id,
                "question": item.query,
                "reference": reference,
                "answer": answer.text,
                "tokens": lengths[document.id],
                "bucket": length_bucket(lengths[document.id]),
                "windows": answer.windows,
                "cited": [c.to_json() for c in answer.citations],
                "f1": token_f1(answer.text, item.answers),
                "sub_em": sub_em(answer.text, item.answers),
                **(
                    {"choice_accuracy": choice_accuracy(answer.text, reference)}
                    if multiple_choice
                    else {}
                ),
            }
        )
    verdicts = judge_answers(
        judge,
        "yes-no-mc" if multiple_choice else "yes-no",
        [r["question"] for r in records],
        [r["reference"] for r in records],
        [r["answer"] for r in records],
    )
    for record, verdict in zip(records, verdicts, strict=True):
        record.update(judge=verdict.score, judge_output=verdict.raw)
    name = system or (retriever.name if retriever is not None else FULL_CONTEXT)
    summary = _qa_summary(records, multiple_choice)
    summary["markdown"] = _qa_markdown(f"leval-{task}", name, summary)
    return QARun(
        f"leval-{task}",
        name,
        records,
        summary,
        _usage(client, judge),
        _settings(client, budget_words=budget_words, task=task),
    )


def _qa_summary(records: Sequence[dict[str, Any]], multiple_choice: bool) -> dict[str, Any]:
    def block(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        parsed = [r["judge"] for r in rows if r["judge"] is not None]
        out = {
            "n": len(rows),
            "judge_accuracy": sum(parsed) / len(parsed) if parsed else None,
            "judge_parse_failure_rate": 1 - len(parsed) / len(rows) if rows else 0.0,
            "f1": sum(r["f1"] for r in rows) / len(rows) if rows else None,
        }
        if multiple_choice:
            out["choice_accuracy"] = (
                sum(r["choice_accuracy"] for r in rows) / len(rows) if rows else None
            )
        return out

    buckets = [name for _, _, name in LENGTH_BUCKETS if any(r["bucket"] == name for r in records)]
    return {
        **block(records),
        "by_bucket": {name: block([r for r in records if r["bucket"] == name]) for name in buckets},
    }


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _qa_markdown(benchmark: str, system: str, summary: dict[str, Any]) -> str:
    keys = [
        k
        for k in ("judge_accuracy", "choice_accuracy", "f1", "judge_parse_failure_rate")
        if k in summary
    ]
    rows = [("all", summary), *summary["by_bucket"].items()]
    lines = [
        f"| {benchmark} · {system} | n | " + " | ".join(keys) + " |",
        "| :--- | ---: |" + " ---: |" * len(keys),
        *(
            f"| {name} | {block['n']} | " + " | ".join(_fmt(block[k]) for k in keys) + " |"
            for name, block in rows
        ),
    ]
    return "\n".join(lines)


def _plot_by_bucket(by_bucket: dict[str, dict[str, Any]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(by_bucket)
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(
        names,
        [by_bucket[n]["judge_accuracy"] or 0 for n in names],
        marker="o",
        label="judge accuracy",
    )
    axis.plot(names, [by_bucket[n]["f1"] or 0 for n in names], marker="s", label="F1")
    axis.set(xlabel="document length (cl100k tokens)", ylabel="score", ylim=(0, 1), title=title)
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ---------------------------------------------------------------- EMB-S localisation by an LLM


def serialize_collection(
    documents: Sequence[Document], budget_tokens: int, count: Callable[[str], int] = count_tokens
) -> tuple[str, dict[int, str]]:
    """``[DocID=n] text`` blocks in order, skipping documents that would overflow the budget
    (in ``count``'s tokens); returns the text and the id → document map of what was shown."""
    blocks, shown, used = [], {}, 0
    for number, document in enumerate(documents):
        block = f"[DocID={number}] {' '.join(document.text.split())}"
        tokens = count(block) + 1
        if used + tokens > budget_tokens:
            continue
        blocks.append(block)
        shown[number] = document.id
        used += tokens
    return "\n".join(blocks), shown


def parse_document_ids(text: str, k: int, valid: Collection | None = None) -> list[int]:
    """The first ``k`` unique integers of an LLM's reply; with ``valid``, only those ids
    (the canonical rule; without it, the paper's raw rule that keeps any integer)."""
    ids: list[int] = []
    for match in re.findall(r"\d+", text):
        number = int(match)
        if number in ids or (valid is not None and number not in valid):
            continue
        ids.append(number)
        if len(ids) == k:
            break
    return ids


def run_localization(
    client: LLMClient,
    benchmark: str = "hotpotqa-collection",
    *,
    k: int = 5,
    target_words: int = 3_000,
    max_items: int | None = 20,
    data_dir: str | None = None,
) -> QARun:
    """Ask the LLM for the evidence documents of each question in a ``[DocID=n]`` corpus."""
    items = build_benchmark(
        benchmark, target_words=target_words, max_items=max_items, data_dir=data_dir
    )
    budget = client.config.context_tokens - 200 - 64
    measures = [Measure.parse(m) for m in (f"docSR@{k}", "docR@1", f"docFR@{k}")]
    records = []
    requests = []
    shown_maps = []
    for item in items:
        corpus, shown = serialize_collection(
            item.documents, budget - client.count_tokens(item.query), client.count_tokens
        )
        requests.append(LOCALIZE_DOCUMENTS.messages(corpus=corpus, question=item.query, k=str(k)))
        shown_maps.append(shown)
    completions = client.chat_many(requests, max_tokens=64, desc="localize")
    for item, shown, completion in zip(items, shown_maps, completions, strict=True):
        canonical = [shown[i] for i in parse_document_ids(completion.text, k, shown)]
        raw = parse_document_ids(completion.text, k)
        raw_docs = [shown.get(i, f"invalid:{i}") for i in raw]
        records.append(
            {
                "id": item.id,
                "question": item.query,
                "gold": item.gold_doc_ids,
                "gold_shown": [g for g in item.gold_doc_ids if g in shown.values()],
                "output": completion.text,
                "canonical": canonical,
                "raw": raw,
                "scores": document_scores(canonical, item.gold_doc_ids, measures),
                "raw_scores": document_scores(raw_docs, item.gold_doc_ids, measures),
            }
        )
    summary: dict[str, Any] = {}
    for key in ("scores", "raw_scores"):
        for measure in measures:
            values = [r[key][measure.name] for r in records if measure.name in r[key]]
            summary[f"{key}.{measure.name}"] = sum(values) / len(values) if values else None
    summary["markdown"] = "\n".join(
        [
            f"| {benchmark} · LLM localisation | rule | "
            + " | ".join(m.name for m in measures)
            + " |",
            "| :--- | :--- |" + " ---: |" * len(measures),
            *(
                f"| {client.config.model} | {rule} | "
                + " | ".join(_fmt(summary[f"{key}.{m.name}"]) for m in measures)
                + " |"
                for rule, key in (
                    ("first K unique valid ids", "scores"),
                    ("raw: any integer", "raw_scores"),
                )
            ),
        ]
    )
    return QARun(
        benchmark,
        f"llm-localize-{client.config.model}",
        records,
        summary,
        _usage(client, client),
        _settings(client, k=k, target_words=target_words),
    )


def _usage(client: LLMClient, judge: LLMClient) -> dict[str, float]:
    usage = client.usage.as_dict()
    if judge is not client:
        for key, value in judge.usage.as_dict().items():
            usage[f"judge_{key}"] = value
    return usage


def _settings(client: LLMClient, **extra: Any) -> dict[str, Any]:
    return {"llm": client.config.public(), "prompts": versions(), **extra}


def run_qa_benchmark(
    benchmark: str,
    system: str,
    client: LLMClient,
    budget_words: int,
    window_tokens: int | None,
    max_items: int | None,
    k: int,
) -> QARun:
    """One system on the answer-level benchmark ``longscan bench`` names: ``loong``,
    ``leval-coursera``, ``leval-financial`` or ``localize-<dataset>`` (whose system is the
    LLM itself, returning ``k`` documents)."""
    if benchmark.startswith("localize-"):
        dataset = benchmark.split("-", 1)[1]
        return run_localization(client, f"{dataset}-collection", k=k, max_items=max_items)
    retriever = None if system == FULL_CONTEXT else make_retriever(system, [])
    if benchmark == "loong":
        return run_loong(
            client, retriever, system=system, budget_words=budget_words, max_items=max_items
        )
    task = "coursera" if benchmark == "leval-coursera" else "financial_qa"
    return run_longdoc_qa(
        client, task, retriever, system=system, budget_words=budget_words,
        window_tokens=window_tokens, max_items=max_items,
    )  # fmt: skip
