"""A causal LM reads ``[DOC i]`` passages in its context and replies in one of the paper's
output formats (SEEDS.md §3); the reply's ids, quotes and copied content are mapped back to
passages and exact offsets.

The passages are read into a KV cache once per collection; each format then pays only for
its own instruction and reply, and replies are kept, so a retriever and an answer-level
benchmark asking the same thing share one generation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from longscan.documents import Document
from longscan.incontext.decoding import Reading, greedy, read
from longscan.incontext.docids import (
    CUES,
    Format,
    Located,
    Passage,
    build_prompt,
    locate_quote,
    parse_answer,
    parse_copied,
    parse_ids,
    parse_quotes,
)

if TYPE_CHECKING:
    from longscan.incontext.lm import CausalLM

MAX_NEW_TOKENS = {Format.AO: 24, Format.ID: 48, Format.ID_C: 256, Format.ID_Q: 192}
"""Reply lengths: an answer of a few words; ids then an answer; copied sentences or quotes."""
KEPT_REPLIES = 1024
"""Replies kept (the most recent), so a benchmark that asks again pays nothing."""


@dataclass(frozen=True)
class Reply:
    """A reply read back: its text (the cue and the model's continuation), the passages it
    cites (indices into the passages shown, first cited first), its quotes or copied content
    found in them, and its answer."""

    fmt: Format
    text: str
    cited: tuple[int, ...]
    found: tuple[Located, ...]
    answer: str


def finished(text: str) -> bool:
    """Whether a reply is complete: its ``Answer:`` line has ended, the model has gone on to a
    question of its own, or it repeats a line (a small model loops)."""
    if "\nQuestion:" in text:
        return True
    *done, _ = text.split("\n")
    lines = [line for line in done if line.strip()]
    if len(lines) > len(set(lines)):
        return True
    _, sep, answer = text.rpartition("Answer:")
    return bool(sep) and "\n" in answer.lstrip(" ") and bool(answer.strip())


def _trimmed(text: str) -> str:
    """The reply up to a question of the model's own, each line once."""
    lines = text.split("\nQuestion:", 1)[0].rstrip().split("\n")
    return "\n".join(dict.fromkeys(line for line in lines if line.strip()))


class InContextReader:
    """Replies in a ``[DOC i]`` format from one causal LM.

    Args:
        lm: the loaded model.
        window_tokens: the longest prompt it reads (default: ``lm.DEFAULT_WINDOW_TOKENS``,
            capped by the model's context less the longest reply).
    """

    def __init__(self, lm: CausalLM, window_tokens: int | None = None) -> None:
        self.lm = lm
        self.window_tokens = lm.window_tokens(window_tokens, max(MAX_NEW_TOKENS.values()))
        self._head: tuple[tuple, Reading] | None = None
        self._replies: OrderedDict[tuple, Reply] = OrderedDict()

    def _passages_read(self, key: tuple, head_ids: list[int]) -> Reading:
        """The passages read into a cache (the last collection's is kept)."""
        if self._head is None or self._head[0] != key:
            self._head = (key, read(self.lm, head_ids))
        return self._head[1]

    def reply(
        self,
        question: str,
        documents: Sequence[Document],
        passages: Sequence[Passage],
        fmt: Format,
    ) -> Reply:
        """The model's reply in ``fmt`` to ``question`` over ``passages``.

        Raises:
            ValueError: the prompt does not fit the window.
        """
        question = question.strip()  # as retrievers read it, so they share the reply
        collection = (tuple(d.content_hash for d in documents), tuple(passages))
        key = (collection, question, fmt)
        if key in self._replies:
            self._replies.move_to_end(key)
            return self._replies[key]
        prompt = build_prompt(question, documents, passages, fmt)
        before, after = self.lm.chat_frame()  # a chat model replies after its template's turn
        head = before + prompt.text[: prompt.question_start]
        tail = prompt.text[prompt.question_start : -len(CUES[fmt])] + after + CUES[fmt]
        tail_ids = self.lm.encode(tail)
        head_ids = self.lm.tokenizer.encode(head, add_special_tokens=not before)
        needed = len(head_ids) + len(tail_ids)
        if needed > self.window_tokens:
            raise ValueError(
                f"the {len(passages)} passages and the question take {needed:,} tokens; "
                f"{self.lm.name} reads {self.window_tokens:,} here: ask over fewer or "
                "shorter documents, or name a model with a longer window"
            )
        text = CUES[fmt] + greedy(
            self.lm,
            self._passages_read(collection, head_ids).fork(),
            tail_ids,
            MAX_NEW_TOKENS[fmt],
            lambda continuation: finished(CUES[fmt] + continuation),
        )
        self._replies[key] = self._parse(_trimmed(text), fmt, documents, passages)
        if len(self._replies) > KEPT_REPLIES:
            self._replies.popitem(last=False)
        return self._replies[key]

    @staticmethod
    def _parse(
        text: str, fmt: Format, documents: Sequence[Document], passages: Sequence[Passage]
    ) -> Reply:
        found: list[Located | None] = []
        if fmt is Format.ID_Q:
            found = [locate_quote(quote, documents, passages) for quote in parse_quotes(text)]
        elif fmt is Format.ID_C:
            found = [
                locate_quote(content, documents, [passages[number - 1]])
                for number, content in parse_copied(text, len(passages))
            ]
        cited = [number - 1 for number in parse_ids(text, len(passages))]
        return Reply(
            fmt,
            text,
            tuple(cited),
            tuple(located for located in found if located is not None),
            parse_answer(text) if "Answer:" in text or fmt is Format.AO else "",
        )
