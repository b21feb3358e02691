"""Training questions asked in other words: a written question reworded the way a person asks
who has not read the document, with the same labels.

A question writer shown a table copies its rows' words ("What was the total net sales of
...?"), so a scanner trained on its questions learns to match words, while users ask "how
much did the company sell?". Each example's question is reworded by an LLM told which of its
words come from the labelled lines, and kept only when the new question

- ends with a question mark and is not much longer than the old one,
- keeps every number of the old one (years, quarters, amounts), so it asks about the same
  period, and
- uses fewer of the labelled lines' content terms than the old one did (names aside): at
  least one copied word is put in other words.

The labels stay the old example's, so the answer is still in the labelled lines.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longscan.answering.pipelines import ChatModel
from longscan.answering.prompts import REWORD_QUESTION
from longscan.lexical.bm25 import tokenize
from longscan.progress import track
from longscan.training.synthetic_examples import SyntheticExample, unpack_line

REWORD_TOKENS = 64  # a question, with room to spare
_NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")
_EDGES = "?!.,;:\"'()"
_LABEL = re.compile(r"^\s*(?:reworded question|question)\s*:\s*", re.IGNORECASE)


class Dropped(ValueError):
    """A reply that is not a usable rewording; the message is the reason counted."""


def _terms(text: str) -> set[str]:
    return set(tokenize([text])[0])


def _numbers(text: str) -> set[str]:
    return {match.group().replace(",", "") for match in _NUMBER.finditer(text)}


def copied_terms(question: str, lines: Sequence[str], names_of: str) -> set[str]:
    """The content terms ``question`` shares with ``lines``, without numbers (a rewording
    keeps them) and without the terms of the capitalised words of ``names_of`` after its
    first word (a company's or party's name, which a rewording keeps too)."""
    names = " ".join(word for word in names_of.split()[1:] if word[:1].isupper())
    shared = (_terms(question) & _terms(" ".join(lines))) - _terms(names)
    return {term for term in shared if not any(c.isdigit() for c in term)}


def copied_words(question: str, lines: Sequence[str]) -> list[str]:
    """The words of ``question`` whose terms it copied from ``lines`` (``copied_terms``), as
    the question writes them, in its order: what a rewording is asked to replace."""
    copied = copied_terms(question, lines, question)
    words = [word.strip(_EDGES) for word in question.split()]
    return list(dict.fromkeys(w for w in words if w and _terms(w) & copied))


def checked_rewording(original: str, reply: str, lines: Sequence[str]) -> str:
    """The reworded question in ``reply``, checked against the ``original`` question and the
    labelled ``lines`` (the module's rules).

    Raises:
        Dropped: why the reply is not kept.
    """
    text = _LABEL.sub("", reply.strip().split("\n")[0]).strip().strip("\"'`").strip()
    if not text.endswith("?"):
        raise Dropped("not a question")
    if len(text.split()) > 2 * len(original.split()) + 10:
        raise Dropped("too long")
    if text.casefold() == original.strip().casefold():
        raise Dropped("unchanged")
    if not _numbers(original) <= _numbers(text):
        raise Dropped("a number of the question lost")
    copied = copied_terms(original, lines, original)
    if not copied:
        raise Dropped("the question shares no word with its lines")
    if len(copied_terms(text, lines, original)) >= len(copied):
        raise Dropped("no copied word put in other words")
    return text


@dataclass
class RewordReport:
    """What a run did: counts, each kept example's question before and after, the reasons
    for each drop."""

    attempts: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    kept: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "kept": len(self.kept),
            "dropped": dict(self.dropped.most_common()),
            "prompt": REWORD_QUESTION.tag,
            "reworded": self.kept,
        }


def reword_examples(
    lines: Sequence[dict[str, Any]],
    chat: ChatModel,
    sources: Path,
    count: int,
    seed: int = 0,
    strategy: str | None = None,
) -> tuple[list[dict[str, Any]], RewordReport]:
    """Up to ``count`` packed example lines (``strategy``'s only, when given), drawn with
    ``seed``, each with its question reworded (``checked_rewording``) under the id
    ``<id>-reworded``; the lines kept and the report."""
    pool = [raw for raw in lines if strategy is None or raw.get("strategy") == strategy]
    chosen = random.Random(seed).sample(pool, min(count, len(pool)))
    report = RewordReport()
    kept: list[dict[str, Any]] = []
    for raw in track(chosen, "rewording questions"):
        example = SyntheticExample.from_dict(raw if "text" in raw else unpack_line(raw, sources))
        labelled = [example.text[start:end] for start, end in example.labels]
        words = copied_words(example.question, labelled)
        report.attempts += 1
        if not words:
            report.dropped["the question shares no word with its lines"] += 1
            continue
        messages = REWORD_QUESTION.messages(question=example.question, words=", ".join(words))
        reply = chat.chat(messages, max_tokens=REWORD_TOKENS).text
        try:
            question = checked_rewording(example.question, reply, labelled)
        except Dropped as reason:
            report.dropped[str(reason)] += 1
            continue
        kept.append({**raw, "id": f"{raw['id']}-reworded", "question": question})
        report.kept.append({"id": kept[-1]["id"], "before": example.question, "after": question})
    return kept, report


def write_reworded(out: Path, kept: Sequence[dict[str, Any]], report: RewordReport) -> None:
    """``out``: the kept lines (packed, as ``synth-pack`` writes them); beside it,
    ``OUT.report.json``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(k, ensure_ascii=False) + "\n" for k in kept), "utf-8")
    report_path = out.with_name(out.name + ".report.json")
    report_path.write_text(json.dumps(report.as_dict(), indent=1, ensure_ascii=False) + "\n")
