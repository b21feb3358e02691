"""Time to an answer once the question is scanned, for each answerer and local runtime.

    python benchmarks/answer_speed.py [--items 5] [--budgets 300,1000] \
        [--runtimes gpt4all,llama-cpp-python] [--save NAME]

The first ``--items`` HotpotQA-long development questions are scanned first (not timed);
then each answerer answers from the scanner's evidence at each word budget (its sentences
read in their paragraphs, as ``ask`` reads them), and the wall
time of that step alone is kept: the extractive reader (ONNX Runtime), and the local
instruct model through each runtime named: ``gpt4all`` (the prebuilt llama.cpp that
``longscan[answerer]`` installs) and ``llama-cpp-python`` (llama.cpp compiled on this
machine by ``pip``; only when installed), both greedy on the same ChatML prompt, so they
also show whether the two builds give the same answers. The model answers as ``ask`` has it
answer (``ChatAnswerer``, loaded as ``ask`` loads it: a reply of citations alone is asked
again), so a time is what a user waits. Prints median and maximum seconds, prompt tokens,
how many answers were asked twice and the share of answers equal to the first runtime's;
``--save`` writes them to ``benchmarks/results/NAME.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence

import result_files

from longscan.answering.answerers import ChatAnswerer, ExtractiveAnswerer, get_answerer
from longscan.answering.inprocess import MAX_ANSWER_TOKENS, PROMPT_BATCH, chatml
from longscan.answering.llm import Completion, Message
from longscan.answering.local import QUESTION_WRITER
from longscan.answering.pipelines import ChatModel
from longscan.bench.catalogue import build_benchmark
from longscan.pipeline import Found, Pipeline


class CompiledChat:
    """The same model and prompt through llama-cpp-python (a llama.cpp built by pip)."""

    def __init__(self) -> None:
        from llama_cpp import Llama

        self.model = Llama(
            str(QUESTION_WRITER.path()),
            n_ctx=8192,
            n_batch=PROMPT_BATCH,
            n_threads=os.cpu_count() or 1,
            verbose=False,
        )

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> Completion:
        started = time.perf_counter()
        reply = self.model.create_completion(
            chatml(messages),
            max_tokens=max_tokens or MAX_ANSWER_TOKENS,
            temperature=0.0,
            top_k=1,
            repeat_penalty=1.0,
            stop=["<|im_end|>"],
        )
        usage = reply["usage"]
        return Completion(
            reply["choices"][0]["text"].strip(),
            usage["prompt_tokens"],
            usage["completion_tokens"],
            time.perf_counter() - started,
        )


class Counted:
    """A chat model that counts its requests."""

    def __init__(self, chat: ChatModel) -> None:
        self.chat_model = chat
        self.requests = 0

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> Completion:
        self.requests += 1
        return self.chat_model.chat(messages, max_tokens)


def timed(answer: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = answer()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--budgets", default="300,1000")
    parser.add_argument("--runtimes", default="gpt4all,llama-cpp-python")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    args = parser.parse_args()
    items = build_benchmark("hotpotqa-long", "dev", 20_000, max_items=args.items)
    budgets = [int(b) for b in args.budgets.split(",")]
    found: dict[tuple[int, str], Found] = {}
    for budget in budgets:
        pipeline = Pipeline("scanner", None, budget_words=budget, abstain=False)
        for item in items:
            found[(budget, item.id)] = pipeline.find(item.query, item.documents)
    counted: dict[str, Counted] = {}
    for runtime in args.runtimes.split(","):
        if runtime == "gpt4all":
            local = get_answerer("local")  # loaded as ``ask`` loads it
            assert isinstance(local, ChatAnswerer)
            counted[runtime] = Counted(local.chat)
        elif importlib.util.find_spec("llama_cpp") is not None:
            counted[runtime] = Counted(CompiledChat())
    chats = {runtime: ChatAnswerer(chat, runtime) for runtime, chat in counted.items()}
    reader = ExtractiveAnswerer()
    columns = ["answerer", "words", "n", "median s", "max s", "prompt tokens", "asked twice"]
    columns.append("same answer as first")
    lines: list[list[object]] = []
    for budget in budgets:
        rows = {"extractive": [], **{name: [] for name in chats}}
        twice = dict.fromkeys(chats, 0)
        for item in items:
            evidence = found[(budget, item.id)]
            rows["extractive"].append(
                timed(lambda e=evidence: reader.answer(e.question, e.evidence, e.documents))
            )
            for name, chat in chats.items():
                before = counted[name].requests
                rows[name].append(
                    timed(lambda e=evidence, c=chat: c.answer(e.question, e.evidence, e.documents))
                )
                twice[name] += counted[name].requests - before > 1
        first = [answer.text for _, answer in rows[next(iter(chats))]] if chats else []
        for name, results in rows.items():
            seconds = [s for s, _ in results]
            tokens = [a.tokens.get("prompt", 0) for _, a in results]
            same = (
                sum(a.text == f for (_, a), f in zip(results, first, strict=True)) / len(first)
                if name in chats
                else math.nan
            )
            lines.append(
                [name, budget, len(results), round(statistics.median(seconds), 2)]
                + [round(max(seconds), 2), round(statistics.mean(tokens))]
                + [twice[name] if name in chats else None]
                + [None if math.isnan(same) else round(same, 2)]
            )
            print(name, budget, "seconds, each:", " ".join(f"{s:.2f}" for s in seconds))
    found = result_files.table("Time to an answer, question already scanned", columns, lines)
    print(result_files.markdown(found))
    if args.save:
        print(f"saved {result_files.save(args.save, vars(args), [found])}")


if __name__ == "__main__":
    main()
