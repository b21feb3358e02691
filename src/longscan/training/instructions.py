"""Training queries that begin with an instruction, as prompts from agents and RAG pipelines do.

A query the scanner reads is often a whole prompt: a few sentences on the task, then the
question. The query vector and the first stage's BM25 read those sentences too, and they
match boilerplate (a report's notes, a contract's definitions) better than the question's
evidence. Copies of training examples whose question comes after an instruction teach the
scanner to read for the question. The instructions are composed from generic parts written
for this module (no benchmark's wording: a test checks), so a benchmark's own instruction
stays unseen.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from longscan.items import instructed_query

OPENERS = (
    "You are a careful research assistant.",
    "You are an analyst helping a colleague.",
    "Act as a meticulous reader of long texts.",
    "You are helping a user who has shared some material with you.",
    "Imagine you are an expert reviewer.",
    "You are a question answering system.",
    "",
)
TASKS = (
    "Read the {text} given above and respond to the request that follows.",
    "Use the {text} supplied with this message to reply to the question at the end.",
    "Go through the {text} thoroughly, then answer what is asked below.",
    "The user has attached {text}; study what is there before you reply.",
    "Look through the {text} and find what is needed to respond.",
    "Below the {text} there is a question for you to address.",
    "Consult the {text} and ground your response in what you find.",
)
TEXTS = (
    "documents",
    "material",
    "passages",
    "context",
    "records",
    "text",
    "excerpts",
    "files",
)
RULES = (
    "Do not rely on outside knowledge.",
    "If nothing there settles the matter, say that you cannot tell.",
    "Keep your reply short and point to where each fact appears.",
    "Quote figures exactly as they are written.",
    "When several parts are relevant, combine them into one reply.",
    "Answer in a single sentence where possible.",
    "Explain your reasoning briefly before giving the final reply.",
    "",
)

Example = TypeVar("Example", bound=tuple)
TOPIC_SHARE = 2 / 3
MIN_TOPIC_WORDS, MAX_TOPIC_WORDS = 3, 7
_LETTER = re.compile(r"[^\W\d_]")


def _pick(options: Sequence[str], key: bytes, position: int) -> str:
    return options[key[position] % len(options)]


def instruction_for(key: str, topic: str | None = None) -> str:
    """One instruction of the composed pool, picked by ``key``'s hash (reproducible);
    ``topic`` names what the material is about, as many prompts do."""
    digest = hashlib.sha256(key.encode()).digest()
    text = _pick(TEXTS, digest, 2)
    if topic:
        text = f"{text} on {topic}"
    parts = (
        _pick(OPENERS, digest, 0),
        _pick(TASKS, digest, 1).format(text=text),
        _pick(RULES, digest, 3),
        _pick(RULES, digest, 4) if digest[5] % 2 else "",
        _pick(RULES, digest, 6) if digest[7] % 3 == 0 else "",
    )
    return " ".join(dict.fromkeys(part for part in parts if part))


def instructed(query: str, key: str, topic: str | None = None) -> str:
    """``query`` after an instruction of the pool, as ``instructed_query`` asks it."""
    return instructed_query(instruction_for(key, topic), query)


def _has_letter(word: str) -> bool:
    return _LETTER.search(word) is not None


def topic_phrase(negatives: Sequence[str], key: str) -> str | None:
    """A few words in a row of one of ``negatives`` (units that are not evidence), picked
    by ``key``'s hash: a topic that matches the material but not the answer, the way an
    instruction naming the material ("the financial statements of the companies") matches
    boilerplate. None when no unit has words enough (its spaces are read as one)."""
    split = (text.split() for text in negatives)
    usable = [words for words in split if sum(map(_has_letter, words)) >= MIN_TOPIC_WORDS]
    if not usable:
        return None
    digest = hashlib.sha256(key.encode()).digest()
    words = usable[int.from_bytes(digest[8:12]) % len(usable)]
    length = MIN_TOPIC_WORDS + digest[12] % (MAX_TOPIC_WORDS - MIN_TOPIC_WORDS + 1)
    start = digest[13] % max(len(words) - length + 1, 1)
    return " ".join(words[start : start + length]).strip(".,;:!?")


def with_instruction_copies(
    examples: Sequence[Example],
    share: float,
    salt: str,
    negatives_of: Callable[[Example], Sequence[str]] | None = None,
) -> list[Example]:
    """``examples`` and, for ``share`` of them picked by hash, a copy whose query (the
    first field) begins with an instruction and whose source (the last) says so; the copy
    reads the same documents and labels. With ``negatives_of`` (an example's units that are
    not evidence), ``TOPIC_SHARE`` of the instructions name a topic taken from them.

    Copies, not replacements: a plain question stays as common as it was."""
    copies = []
    for index, example in enumerate(examples):
        key = f"{salt}/{index}/{example[0]}"
        digest = hashlib.sha256(key.encode()).digest()
        if digest[31] / 256 < share:
            query, *read, source = example
            topic = None
            if negatives_of is not None and digest[30] / 256 < TOPIC_SHARE:
                topic = topic_phrase(negatives_of(example), key)
            copies.append((instructed(query, key, topic), *read, f"{source}+instruction"))
    return [*examples, *copies]  # type: ignore[list-item]
