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
from collections.abc import Sequence
from typing import TypeVar

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


def _pick(options: Sequence[str], key: bytes, position: int) -> str:
    return options[key[position] % len(options)]


def instruction_for(key: str) -> str:
    """One instruction of the composed pool, picked by ``key``'s hash (reproducible)."""
    digest = hashlib.sha256(key.encode()).digest()
    text = _pick(TEXTS, digest, 2)
    parts = (
        _pick(OPENERS, digest, 0),
        _pick(TASKS, digest, 1).format(text=text),
        _pick(RULES, digest, 3),
        _pick(RULES, digest, 4) if digest[5] % 2 else "",
        _pick(RULES, digest, 6) if digest[7] % 3 == 0 else "",
    )
    return " ".join(dict.fromkeys(part for part in parts if part))


def instructed(query: str, key: str) -> str:
    """``query`` after an instruction, the blank line between them as prompts have it."""
    return f"{instruction_for(key)}\n\n{query}"


def with_instruction_copies(examples: Sequence[Example], share: float, salt: str) -> list[Example]:
    """``examples`` and, for ``share`` of them picked by hash, a copy whose query (the
    first field) begins with an instruction and whose source (the last) says so; the copy
    reads the same documents and labels.

    Copies, not replacements: a plain question stays as common as it was."""
    copies = []
    for index, example in enumerate(examples):
        key = f"{salt}/{index}/{example[0]}"
        if hashlib.sha256(key.encode()).digest()[31] / 256 < share:
            query, *read, source = example
            copies.append((instructed(query, key), *read, f"{source}+instruction"))
    return [*examples, *copies]  # type: ignore[list-item]
