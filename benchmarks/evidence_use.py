"""Evidence use: how well an answerer answers from each retriever's evidence.

    python benchmarks/evidence_use.py [--sets hotpotqa-long,musique-long,...] \
        [--rows scanner,scanner+1,bm25-chunk,oracle,none,...] [--budgets 300,1000] [--items N] \
        [--answerer local|llm|extractive] [--llm URL --llm-model NAME] [--out DIR]

Every row reads the same items of each development set. A retrieval row hands the answerer
the retriever's best units in a word budget (``longscan.pipeline.Pipeline``, no
abstention: every question is answered); ``scanner+1`` reads each unit with one sentence on
either side, ``scanner+p`` with its whole paragraph, ``scanner+p1`` only its best unit
with its paragraph, inside the same budget; ``oracle``
hands it the gold sentences in the same budget (what the answerer can do with the right
evidence), ``none`` asks it with no evidence (what it knows alone). Besides each generative
answer, the extractive reader reads the same evidence, so its EM/F1 stand beside the
model's SubEM/F1. Loong's answers (lists and tables of companies or papers, which no
substring match scores) are also scored part by part (the share of the reference's
companies or titles an answer names, and whether it names all of them) and by Loong's
judge (1 to 100, asked of the server ``--judge-llm`` names, else of the answering chat
model, unless ``--no-judge``; its verdict is kept with the answer), with the share of
verdicts that parse.
Answers are kept in ``DIR/answers.jsonl``, keyed by set, item, row, budget, answerer and
prompt version, so an interrupted run resumes and a rerun asks nothing again. Prints one
table per set with SubEM, token F1, the reader's EM/F1, seconds and tokens per question.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import result_files

from longscan.answering.answerers import Answerer, ExtractiveAnswerer, get_answerer
from longscan.answering.llm import LLMClient, resolve_config
from longscan.answering.pipelines import Answer, ChatModel
from longscan.answering.prompts import (
    ANSWER_CLOSED_BOOK,
    ANSWER_FROM_CITED,
    ANSWER_WITH_EVIDENCE,
    versions,
)
from longscan.bench.catalogue import build_benchmark
from longscan.evaluation.answers import JUDGES, exact_match, part_recall, sub_em, token_f1
from longscan.evaluation.budgets import answer_parts
from longscan.items import QAItem
from longscan.pipeline import Pipeline
from longscan.progress import track
from longscan.retrievers import get_retriever
from longscan.retrievers.simple import OracleRetriever

SETS = {  # development sets and their built length in words (L-Eval and Loong keep theirs)
    "hotpotqa-long": 20_000,
    "musique-long": 20_000,
    "squad-long": 50_000,
    "loong": 0,
    "leval-financial": 0,
}
_CITATION = re.compile(r"\[\d+(?:\s*[,;]\s*\d+)*\]")
_ROW = re.compile(r"[a-z0-9-]+(\+(\d+|p\d*))?")
ROWS = ("scanner", "bm25-chunk", "dense-chunk", "hybrid-sentence", "rerank", "oracle", "none")
JUDGED = {"loong": "loong"}  # set → the judge (``longscan.evaluation.answers.JUDGES``) it reads


def answering_versions() -> dict[str, int]:
    """The versions of the prompts an answer depends on (its key: editing a judge's or the
    question writer's prompt asks nothing again)."""
    used = {ANSWER_WITH_EVIDENCE.name, ANSWER_FROM_CITED.name, ANSWER_CLOSED_BOOK.name}
    return {name: version for name, version in versions().items() if name in used}


def retriever_of(row: str) -> str:
    """``scanner+1`` → ``scanner``: a row names a retriever, then how many neighbouring
    sentences each of its units is read with (``+p``: its paragraph)."""
    return row.partition("+")[0]


def widening_of(row: str) -> dict[str, Any]:
    """The ``Pipeline`` options a row's suffix names: none the units alone, ``+1`` one
    neighbour on each side, ``+p`` every unit's paragraph (what ``ask`` reads by default),
    ``+p1`` the best unit's only."""
    widening = row.partition("+")[2]
    if widening.isdigit():
        return {"neighbours": int(widening), "paragraph": False}
    if widening.startswith("p"):
        return {"paragraph": True, "widened": int(widening[1:]) if widening[1:] else None}
    return {"paragraph": False}


def answers_of(item: QAItem, text: str) -> dict[str, float]:
    return {"subem": sub_em(text, item.answers), "f1": token_f1(text, item.answers)}


def strip_citations(text: str) -> str:
    """The answer without its ``[n]`` citations, which no reference answer holds."""
    return _CITATION.sub(" ", text).strip()


class Store:
    """The answers made so far, one JSON line each, by key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a stopped run: that answer is asked again
                self.records[record["key"]] = record

    def add(self, record: dict[str, Any]) -> None:
        self.records[record["key"]] = record
        with self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")


def closed_book(answerer: Answerer, item: QAItem) -> Answer:
    """The answerer's answer with no evidence (a chat model only)."""
    chat = getattr(answerer, "chat", None)
    if chat is None:
        raise ValueError(f"{answerer.name} cannot answer without evidence")
    completion = chat.chat(ANSWER_CLOSED_BOOK.messages(question=item.query))
    return Answer(
        completion.text,
        answerer=answerer.name,
        tokens={"prompt": completion.prompt_tokens, "completion": completion.completion_tokens},
    )


def judged(record: dict[str, Any], item: QAItem, kind: str, chat: ChatModel) -> bool:
    """Add the judge's verdict on ``record``'s answer unless it holds one from this judge
    and prompt version; whether one was added."""
    judge = JUDGES[kind]
    model = chat.config.model if isinstance(chat, LLMClient) else getattr(chat, "name", "")
    tag = f"{kind}@{judge.prompt.version}|{model}"
    if record.get("judge", {}).get("tag") == tag:
        return False
    answer = record["text"] or "(no answer)"
    messages = judge.prompt.messages(question=item.query, reference=item.answers[0], answer=answer)
    completion = chat.chat(messages, max_tokens=judge.max_tokens)
    record["judge"] = {"tag": tag, "score": judge.parse(completion.text), "raw": completion.text}
    return True


def run_set(
    name: str,
    rows: list[str],
    budgets: list[int],
    items: list[QAItem],
    answerer: Answerer,
    reader: ExtractiveAnswerer,
    store: Store,
    stored_only: bool = False,
    judge_chat: ChatModel | None = None,
) -> Iterator[dict[str, Any]]:
    """Every (row, budget, item) record of one set, asked when not stored yet (with
    ``stored_only``, only the stored ones: a report while another run is asking).

    An answer made by the chat answerer's first procedure carries over to a later one when
    it holds words: the later ones differ only on replies of citations alone."""
    prompts = json.dumps(answering_versions(), sort_keys=True)
    procedure = getattr(answerer, "procedure", 1)
    first = f"{answerer.name}|{prompts}"
    tag = first if procedure == 1 else f"{answerer.name}@{procedure}|{prompts}"
    for budget in budgets:
        pipelines = {
            row: Pipeline(
                OracleRetriever(items) if row == "oracle" else get_retriever(retriever_of(row)),
                None,
                top_k=None,
                budget_words=budget,
                abstain=False,
                **widening_of(row),
            )
            for row in rows
            if row != "none"
        }
        for row in rows:
            if row == "none" and budget != budgets[0]:
                continue  # no evidence: the budget changes nothing
            for item in track(items, f"{name} {row} {budget} words"):
                key = f"{name}|{item.id}|{row}|{budget}|{tag}"
                old = store.records.get(f"{name}|{item.id}|{row}|{budget}|{first}")
                if key not in store.records and old and (old["text"].strip() or row == "none"):
                    store.add({**old, "key": key, "carried": True})
                if key not in store.records:
                    if stored_only:
                        continue
                    store.add(ask(key, name, row, budget, item, answerer, reader, pipelines))
                record = store.records[key]
                if (
                    name in JUDGED
                    and judge_chat is not None
                    and not stored_only
                    and judged(record, item, JUDGED[name], judge_chat)
                ):
                    store.add(record)
                if "answer_parts" in item.metadata and item.metadata["answer_parts"]:
                    record = {**record, "parts": part_recall(record["text"], answer_parts(item))}
                yield record


def ask(
    key: str,
    name: str,
    row: str,
    budget: int,
    item: QAItem,
    answerer: Answerer,
    reader: ExtractiveAnswerer,
    pipelines: dict[str, Pipeline],
) -> dict[str, Any]:
    """One question's record: the generative answer and the reader's, with their scores."""
    record: dict[str, Any] = {"key": key, "set": name, "item": item.id, "row": row}
    record["budget"] = budget
    if row == "none":
        started = time.perf_counter()
        answer = closed_book(answerer, item)
        record.update(seconds=time.perf_counter() - started, retrieve_seconds=0.0)
        record.update(text=answer.text, tokens=answer.tokens, words=0)
        record.update(answers_of(item, answer.text))
        return record
    found = pipelines[row].find(item.query, item.documents)
    record["retrieve_seconds"] = found.seconds["prepare"] + found.seconds["retrieve"]
    record["words"] = sum(len(e.text.split()) for e in found.evidence)
    evidence, documents = found.evidence, found.documents
    started = time.perf_counter()
    answer = answerer.answer(item.query, evidence, documents) if evidence else None
    record["seconds"] = time.perf_counter() - started
    text = "" if answer is None else strip_citations(answer.text)
    record.update(text=text, tokens={} if answer is None else answer.tokens)
    record.update(answers_of(item, text))
    extracted = reader.answer(item.query, evidence, documents) if evidence else None
    span = "" if extracted is None or extracted.span is None else extracted.span.text
    record.update(reader_text=span, reader_em=exact_match(span, item.answers))
    record["reader_f1"] = token_f1(span, item.answers)
    return record


def summarise(
    title: str,
    records: list[dict[str, Any]],
    rows: list[str],
    budgets: list[int],
    against: str = "scanner",
) -> dict[str, Any]:
    """One set's table: per row and budget, the means over its items, and against the
    row ``against`` at the same budget the questions each answered right that the other did
    not (paired, the same items), and the exact two-sided sign test of those counts
    (McNemar's exact test: on 30 questions, 5 against 1 is p = 0.22). Where answers have
    parts (Loong's lists), the share of the reference's parts an answer names and whether
    it names all of them."""
    from scipy.stats import binomtest

    groups: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        groups[(record["row"], record["budget"])][record["item"]] = record
    columns = ["row", "words", "n", "SubEM", "F1", "reader EM", "reader F1"]
    columns += [f"only {against} right", "only row right", "p", "answer s/q", "retrieve s/q"]
    columns += ["prompt tok/q", "completion tok/q"]
    parted = any("parts" in record for record in records)
    if parted:
        columns += ["parts", "all parts"]
    judging = any("judge" in record for record in records)
    if judging:
        columns += ["judge", "judge parsed"]
    lines: list[list[Any]] = []
    for budget in budgets:
        reference = groups.get((against, budget), {})
        for row in rows:
            if row == "none" and budget != budgets[0]:
                continue  # no evidence: the budget changes nothing
            group = groups.get((row, budget), {})
            if not group:
                continue
            found = list(group.values())

            def mean(field: str, found: list[dict[str, Any]] = found) -> float:
                return sum(r.get(field, 0.0) for r in found) / len(found)

            def tokens(kind: str, found: list[dict[str, Any]] = found) -> float:
                return sum(r["tokens"].get(kind, 0) for r in found) / len(found)

            paired = [
                (reference[i]["subem"], r["subem"]) for i, r in group.items() if i in reference
            ]
            only_reference = sum(a > b for a, b in paired) if row != against and paired else None
            only_row = sum(b > a for a, b in paired) if row != against and paired else None
            p_value = None
            if only_reference is not None and only_row is not None:
                split = only_reference + only_row
                p_value = round(binomtest(only_reference, split).pvalue, 3) if split else 1.0
            evidence = row != "none"
            lines.append(
                [
                    row,
                    budget if evidence else 0,
                    len(found),
                    round(100 * mean("subem"), 1),
                    round(100 * mean("f1"), 1),
                    round(100 * mean("reader_em"), 1) if evidence else None,
                    round(100 * mean("reader_f1"), 1) if evidence else None,
                    only_reference,
                    only_row,
                    p_value,
                    round(mean("seconds"), 2),
                    round(mean("retrieve_seconds"), 2),
                    round(tokens("prompt")),
                    round(tokens("completion")),
                ]
                + (parts_named(found) if parted else [])
                + (verdicts(found) if judging else [])
            )
    return result_files.table(title, columns, lines)


def parts_named(records: list[dict[str, Any]]) -> list[Any]:
    """The mean share of the reference's parts the answers name, and the share of answers
    that name every part, over the records whose reference has parts."""
    found = [record["parts"] for record in records if "parts" in record]
    if not found:
        return [None, None]
    whole = sum(share == 1.0 for share in found)
    return [round(100 * sum(found) / len(found), 1), round(100 * whole / len(found), 1)]


def verdicts(records: list[dict[str, Any]]) -> list[Any]:
    """The judge's mean score over the verdicts that parse, and the share that parse
    (a record not judged yet counts as unparsed)."""
    scores = [r["judge"]["score"] for r in records if r.get("judge", {}).get("score") is not None]
    mean = round(sum(scores) / len(scores), 1) if scores else None
    return [mean, round(len(scores) / len(records), 2)]


def overview(tables: list[dict[str, Any]], names: list[str], against: str) -> dict[str, Any]:
    """Every set's SubEM / F1 side by side, one line per row and budget, with the paired
    counts against the row ``against`` (it only / the row only) and their p; a row not yet
    answered on every item of a set shows a dash there."""
    columns = ["row", "words"]
    cells: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for name, found in zip(names, tables, strict=True):
        columns += [f"{name} SubEM / F1", "S/R (p)"]
        at = {column: index for index, column in enumerate(found["columns"])}
        whole = max(line[at["n"]] for line in found["rows"])
        for line in found["rows"]:
            row, words = line[at["row"]], line[at["words"]]
            if line[at["n"]] < whole:
                continue
            cells[(row, words)][name] = f"{line[at['SubEM']]} / {line[at['F1']]}"
            paired = (line[at[f"only {against} right"]], line[at["only row right"]], line[at["p"]])
            if paired[0] is not None:
                cells[(row, words)][f"{name} p"] = f"{paired[0]}/{paired[1]} ({paired[2]})"
    rows = [
        [row, words, *(v for n in names for v in (got.get(n), got.get(f"{n} p")))]
        for (row, words), got in cells.items()
    ]
    return result_files.table("Every set: SubEM / F1", columns, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="hotpotqa-long,musique-long")
    parser.add_argument("--rows", default="scanner,bm25-chunk,oracle,none")
    parser.add_argument("--budgets", default="300")
    parser.add_argument("--items", type=int, default=None, help="First N items of each set.")
    parser.add_argument("--answerer", default="local", choices=("local", "llm", "extractive"))
    parser.add_argument("--llm", default=None, help="An OpenAI-compatible server's URL.")
    parser.add_argument("--llm-model", default=None)
    parser.add_argument("--judge-llm", default=None, help="The judge's server (else --llm's).")
    parser.add_argument("--judge-llm-model", default=None)
    parser.add_argument(
        "--no-judge",
        action="store_true",
        help="Ask no judge (a small local model is none for Loong); parts still count.",
    )
    parser.add_argument(
        "--against",
        default="scanner",
        help="The row every other row is paired with (questions only one of them answered).",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/evidence-use"))
    parser.add_argument(
        "--stored-only", action="store_true", help="Report the stored answers; ask nothing."
    )
    parser.add_argument(
        "--save", default=None, help="Write the tables to benchmarks/results/NAME.json."
    )
    args = parser.parse_args()
    rows = args.rows.split(",")
    unknown = [row for row in rows if not _ROW.fullmatch(row) or row.startswith("none+")]
    if unknown or {retriever_of(row) for row in rows} - set(ROWS):
        parser.error(
            f"unknown rows in {rows}; use {', '.join(ROWS)}, each with an optional +N, +p or +pN"
        )
    budgets = [int(b) for b in args.budgets.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    store = Store(args.out / "answers.jsonl")
    answerer = get_answerer(args.answerer, resolve_config(args.llm, args.llm_model))
    assert answerer is not None
    reader = ExtractiveAnswerer()
    judge_chat = None if args.no_judge else getattr(answerer, "chat", None)
    if args.judge_llm and not args.no_judge:
        judge_chat = LLMClient(resolve_config(args.judge_llm, args.judge_llm_model))
    tables = []
    for name in args.sets.split(","):
        words = SETS[name]
        items = build_benchmark(name, "dev", words or 20_000, max_items=args.items)
        records = list(
            run_set(
                name, rows, budgets, items, answerer, reader, store, args.stored_only, judge_chat
            )
        )
        title = f"{name} ({len(items)} items)"
        tables.append(summarise(title, records, rows, budgets, args.against))
        print(result_files.markdown(tables[-1]), flush=True)
        print(flush=True)
    if args.save:
        tables.append(overview(tables, args.sets.split(","), args.against))
        settings = {**vars(args), "answerer": answerer.name, "prompts": versions()}
        print(f"saved {result_files.save(args.save, settings, tables)}")


if __name__ == "__main__":
    main()
