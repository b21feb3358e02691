"""Write the contract development split's questions (``longscan.bench.contracts``).

    python benchmarks/contract_questions.py (--local | --llm URL [--llm-model NAME])
        [--passages 16] [--seed 0] [--out src/longscan/bench/contract_questions.jsonl]

For each held-out contract, ``--passages`` passages spread over its text are shown to the
writer (``CONTRACT_QUESTION``). A reply is kept when ``checked_question`` accepts it and the
same model, shown the passage and the question alone (``ANSWER_FROM_CITED``), answers it as
the writer did (``answered_alike``). Its question is then asked again in other words
(``REWORD_QUESTION``), kept when ``training.reword.checked_rewording`` accepts it. Every
call is cached, so a rerun with the same writer asks nothing again. The report
(``--report``) counts the replies kept and says why each other one was dropped.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from longscan.answering.llm import LLMClient, resolve_config
from longscan.answering.prompts import ANSWER_FROM_CITED, CONTRACT_QUESTION, REWORD_QUESTION
from longscan.bench.contracts import (
    CONTRACTS_DIR,
    HELD_OUT_CONTRACTS,
    QUESTIONS_FILE,
    Unchecked,
    answered_alike,
    checked_question,
    passages,
    title_of,
)
from longscan.bench.datasets import data_path
from longscan.cli.common import start_local_llm
from longscan.progress import track
from longscan.readers.files import read_file
from longscan.training.reword import REWORD_TOKENS, Dropped, checked_rewording, copied_words

QUESTION_TOKENS = 120  # three short lines
REPORT = Path(__file__).parent / "results" / "contract-questions" / "report.json"


def write(
    chat: LLMClient, count: int, seed: int, reverse: bool = False
) -> tuple[list[dict[str, Any]], Counter[str], list[dict[str, str]]]:
    """The questions kept over every held-out contract, the count of each outcome and each
    dropped reply with its reason; with ``reverse``, the passages are asked last first."""
    folder = data_path(CONTRACTS_DIR)
    kept: list[dict[str, Any]] = []
    outcomes: Counter[str] = Counter()
    dropped: list[dict[str, str]] = []
    jobs = [(name, span) for name in HELD_OUT_CONTRACTS for span in range(count)]
    if reverse:
        jobs.reverse()
    contracts = {name: read_file(folder / name, doc_id=name) for name in HELD_OUT_CONTRACTS}
    chosen = {name: passages(c.text, count, seed) for name, c in contracts.items()}
    for name, index in track(jobs, "writing contract questions"):
        text, spans = contracts[name].text, chosen[name][index]
        sentences = [text[start:end] for start, end in spans]
        numbered = "\n".join(f"[{n}] {' '.join(s.split())}" for n, s in enumerate(sentences, 1))
        messages = CONTRACT_QUESTION.messages(title=title_of(name), sentences=numbered)
        reply = chat.chat(messages, max_tokens=QUESTION_TOKENS).text
        try:
            question, answer, at = checked_question(reply, sentences, text)
        except Unchecked as reason:
            outcomes[f"dropped: {reason}"] += 1
            dropped.append({"contract": name, "reply": reply, "reason": str(reason)})
            continue
        passage = " ".join(" ".join(sentence.split()) for sentence in sentences)
        messages = ANSWER_FROM_CITED.messages(evidence=passage, question=question)
        answered = chat.chat(messages, max_tokens=QUESTION_TOKENS).text
        if not answered_alike(answer, answered):
            outcomes["dropped: the passage's reader answered otherwise"] += 1
            dropped.append({"contract": name, "reply": reply, "reason": f"read: {answered}"})
            continue
        outcomes["kept"] += 1
        record = {"contract": name, "sha256": contracts[name].content_hash, "question": question}
        record |= {"phrasing": "written", "answer": answer, "sentence": list(spans[at])}
        kept.append(record)
        words = copied_words(question, [sentences[at]])
        if not words:
            outcomes["not reworded: no word copied"] += 1
            continue
        messages = REWORD_QUESTION.messages(question=question, words=", ".join(words))
        reworded = chat.chat(messages, max_tokens=REWORD_TOKENS).text
        try:
            kept.append({**record, "phrasing": "reworded", "question": checked_rewording(
                question, reworded, [sentences[at]])})  # fmt: skip
            outcomes["reworded"] += 1
        except Dropped as reason:
            outcomes[f"not reworded: {reason}"] += 1
    return kept, outcomes, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    writer = parser.add_mutually_exclusive_group(required=True)
    writer.add_argument("--local", action="store_true", help="Start the local question writer.")
    writer.add_argument("--llm", default=None, help="An OpenAI-compatible server's URL.")
    parser.add_argument("--llm-model", default=None)
    parser.add_argument("--passages", type=int, default=16, help="Passages per contract.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=QUESTIONS_FILE)
    parser.add_argument("--report", type=Path, default=REPORT, help="The counts and drops.")
    parser.add_argument(
        "--reverse",
        action="store_true",
        help="Ask the passages last first: a second writer beside a first one, after which a "
        "run without it writes every question from the shared cache.",
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        url, model = (
            start_local_llm(stack, writer=True) if args.local else (args.llm, args.llm_model)
        )
        config = resolve_config(url, model)
        if config is None:
            parser.error("no LLM: give --local or --llm")
        chat = LLMClient(config)
        kept, outcomes, dropped = write(chat, args.passages, args.seed, args.reverse)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    report = {
        "writer": config.model,
        "prompts": [CONTRACT_QUESTION.tag, ANSWER_FROM_CITED.tag, REWORD_QUESTION.tag],
        "passages per contract": args.passages,
        "seed": args.seed,
        "outcomes": dict(outcomes.most_common()),
        "questions": len(kept),
        "dropped": dropped,
    }
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "dropped"}, indent=1))


if __name__ == "__main__":
    main()
