"""Chunking-free in-context retrieval (CFIC, SEEDS.md §5): the LM reads the text once, then
quotes the evidence, constrained to the text's own sentences.

1. **Encode once.** The text (in windows when it is longer than ``window_tokens``) is read
   into a KV cache kept per window; a second question pays only for its own tokens and the
   decoding.
2. **Constrained sentence-prefix decoding.** A token trie over the window's sentences allows
   only tokens that keep the output a prefix of some sentence. The ``branches`` (3) best first
   tokens each start a branch, extended greedily until its prefix identifies exactly one
   sentence; branches rank by their mean log-probability. Each sentence enters the trie twice,
   tokenized after a space and without one, since the model's tokenizer cuts a sentence
   differently after the prompt's ``Quote:`` than at the start of a line.
3. **Skip decoding.** From the branch's sentence, the probability of ending the quote (end of
   sequence, or a newline) is read at every following sentence end within ``skip_tokens``
   (256) tokens, in one forward pass over the text itself, and the span stops at the argmax:
   it is never generated token by token. Overlapping spans merge.

The paper fine-tunes its reader on (text, question, evidence) triples. The package ships such
a LoRA adapter for the default model (:data:`PACKAGED_ADAPTER`; ``checkpoints/
cfic-gemma-3-270m/MODEL_CARD.md`` says how it was trained and what it gained), which the
``cfic`` retriever reads with; ``cfic:MODEL`` reads with the plain model named.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.documents import Document

if TYPE_CHECKING:
    from longscan.incontext.lm import CausalLM

PACKAGED_ADAPTER = Path(str(files("longscan") / "checkpoints" / "cfic-gemma-3-270m"))
"""LoRA fine-tuning of Gemma 3 270M (the default model) for these prompts."""
PROMPT_HEAD = "Read the text, then quote the passage that answers the question.\n\nText:\n"
PROMPT_TAIL = "\n\nQuestion: {question}\nQuote:"


def head_ids(lm: CausalLM) -> list[int]:
    """The prompt's tokens before the text, led by the model's start-of-text token(s)."""
    return list(lm.tokenizer.encode(PROMPT_HEAD, add_special_tokens=True))


def tail_ids(lm: CausalLM, question: str) -> list[int]:
    """The prompt's tokens after the text: the question and the cue of the quote."""
    return lm.encode(PROMPT_TAIL.format(question=question))


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    sentences: set[int] = field(default_factory=set)


class SentenceTrie:
    """Token prefixes of sentences: ``allowed(node)`` are the tokens that keep a prefix."""

    def __init__(self, depth: int) -> None:
        self.root = _Node()
        self.depth = depth

    def add(self, tokens: Sequence[int], sentence: int) -> None:
        node = self.root
        for token in tokens[: self.depth]:
            node = node.children.setdefault(token, _Node())
            node.sentences.add(sentence)


@dataclass(frozen=True)
class Span:
    """Evidence found in one document: character offsets and the branch's mean log-prob."""

    doc_index: int
    start: int
    end: int
    score: float


@dataclass
class _Window:
    """A window of one document read into the cache: its sentences (document offsets)."""

    start: int
    end: int
    sentences: np.ndarray  # (s, 2) document offsets
    cache: Any
    trie: SentenceTrie


class CFIC:
    """Chunking-free in-context retrieval over one causal LM.

    Args:
        lm: the loaded model (``incontext.lm.load_causal_lm``).
        branches: top-k first tokens kept (the paper's k = 3).
        skip_tokens: how far past a span's start its end may lie (the paper's d = 256).
        window_tokens: text tokens per window (default: ``lm.DEFAULT_WINDOW_TOKENS``, capped
            by the model's context).
        prefix_depth: tokens of each sentence in the trie (enough to tell sentences apart).
    """

    def __init__(
        self,
        lm: CausalLM,
        branches: int = 3,
        skip_tokens: int = 256,
        window_tokens: int | None = None,
        prefix_depth: int = 48,
    ) -> None:
        self.lm = lm
        self.branches = branches
        self.skip_tokens = skip_tokens
        reserve = 512 + skip_tokens  # the question and the quote
        self.window_tokens = lm.window_tokens(window_tokens, reserve)
        self.prefix_depth = prefix_depth
        self._windows: dict[str, list[_Window]] = {}  # the last collection's, by content
        self.stop_ids = lm.stop_token_ids()

    # -- encoding -------------------------------------------------------------------------

    def _forward(self, ids: Sequence[int], cache: Any, keep: Any = 0) -> tuple[Any, Any]:
        """Logits of ``ids`` read after ``cache`` (extended in place): ``(l, vocab)`` for every
        token, or for the last ``keep`` tokens, or at the positions ``keep`` lists (a large
        vocabulary's logits at every position cost more than the rest of the network)."""
        import torch

        tokens = torch.tensor([list(ids)], device=self.lm.device)
        with torch.inference_mode():
            out = self.lm.model(
                input_ids=tokens, past_key_values=cache, use_cache=True, logits_to_keep=keep
            )
        return out.logits[0].float(), out.past_key_values

    def _window_spans(self, document: Document) -> list[tuple[int, int, np.ndarray]]:
        """Sentence-aligned windows ``(start, end, sentences)`` of at most ``window_tokens``."""
        encoding = self.lm.tokenizer(
            document.text, add_special_tokens=False, return_offsets_mapping=True
        )
        starts = np.asarray([a for a, _ in encoding["offset_mapping"]], dtype=np.int64)
        sentences = document.sentences
        ends = np.searchsorted(starts, sentences[:, 1], side="left")  # tokens before each end
        windows, first = [], 0
        while first < len(sentences):
            begin = np.searchsorted(starts, sentences[first, 0], side="left")
            last = int(np.searchsorted(ends, begin + self.window_tokens, side="right")) - 1
            last = max(last, first)
            windows.append(
                (int(sentences[first, 0]), int(sentences[last, 1]), sentences[first : last + 1])
            )
            first = last + 1
        return windows

    def _trie(self, document: Document, sentences: np.ndarray) -> SentenceTrie:
        trie = SentenceTrie(self.prefix_depth)
        for index, (start, end) in enumerate(sentences.tolist()):
            text = document.text[start:end]
            trie.add(self.lm.encode(" " + text), index)
            trie.add(self.lm.encode(text), index)
        return trie

    def windows(self, document: Document) -> list[_Window]:
        """The document's windows read into KV caches, once per text (the texts of the last
        collection asked about are kept)."""
        from transformers import DynamicCache

        key = document.content_hash
        if key not in self._windows:
            head = head_ids(self.lm)
            windows = []
            for start, end, sentences in self._window_spans(document):
                cache = DynamicCache()
                ids = head + self.lm.encode(document.text[start:end])
                _, cache = self._forward(ids, cache, keep=1)
                trie = self._trie(document, sentences)
                windows.append(_Window(start, end, sentences, cache, trie))
            self._windows[key] = windows
        return self._windows[key]

    # -- decoding -------------------------------------------------------------------------

    def _branches(
        self, logits: Any, cache: Any, trie: SentenceTrie
    ) -> list[tuple[int, float, bool]]:
        """``(sentence, mean log-prob, spaced)`` for each of the best ``branches`` prefixes."""
        import torch

        first = torch.log_softmax(logits, dim=-1)
        allowed = list(trie.root.children)
        if not allowed:
            return []
        scores = first[allowed]
        top = torch.topk(scores, min(self.branches, len(allowed))).indices.tolist()
        found = []
        for pick in top:
            token = allowed[pick]
            node, log_probs = trie.root.children[token], [float(scores[pick])]
            branch_cache, path = copy.deepcopy(cache), [token]
            while len(node.sentences) > 1 and node.children:
                step, branch_cache = self._forward([token], branch_cache)
                step_log = torch.log_softmax(step[-1], dim=-1)
                options = list(node.children)
                token = options[int(torch.argmax(step_log[options]))]
                log_probs.append(float(step_log[token]))
                node, path = node.children[token], [*path, token]
            sentence = min(node.sentences)
            spaced = self.lm.tokenizer.decode(path[:1]).startswith(" ")
            found.append((sentence, float(np.mean(log_probs)), spaced))
        return found

    def _span_end(
        self, document: Document, window: _Window, sentence: int, cache: Any, spaced: bool
    ) -> int:
        """Skip decoding: the index of the sentence where the quote most likely stops."""
        import torch

        start = int(window.sentences[sentence, 0])
        text = document.text[start : int(window.sentences[-1, 1])]
        prefix = " " if spaced else ""
        encoding = self.lm.tokenizer(
            prefix + text, add_special_tokens=False, return_offsets_mapping=True
        )
        ids = encoding["input_ids"][: self.skip_tokens]
        token_starts = np.asarray([a for a, _ in encoding["offset_mapping"][: len(ids)]])
        ends = window.sentences[sentence:, 1] - start + len(prefix)  # in prefix + text
        last_tokens = np.searchsorted(token_starts, ends, side="left") - 1
        reachable = ends <= (encoding["offset_mapping"][len(ids) - 1][1] if ids else 0)
        if not reachable.any():
            return sentence
        candidates = torch.as_tensor(last_tokens[reachable], device=self.lm.device)
        logits, _ = self._forward(ids, copy.deepcopy(cache), keep=candidates)
        stop = torch.softmax(logits, dim=-1)[:, self.stop_ids].sum(-1)  # (candidates,)
        return sentence + int(torch.argmax(stop))

    def spans(self, question: str, documents: Sequence[Document]) -> list[Span]:
        """Evidence spans for ``question``, best first, overlapping ones merged."""
        found: list[Span] = []
        tail = tail_ids(self.lm, question)
        kept = {d.content_hash for d in documents}
        self._windows = {k: w for k, w in self._windows.items() if k in kept}
        for doc_index, document in enumerate(documents):
            for window in self.windows(document):
                cache = copy.deepcopy(window.cache)
                logits, cache = self._forward(tail, cache, keep=1)
                for sentence, score, spaced in self._branches(logits[-1], cache, window.trie):
                    last = self._span_end(document, window, sentence, cache, spaced)
                    start, end = int(window.sentences[sentence, 0]), int(window.sentences[last, 1])
                    found.append(Span(doc_index, start, end, score))
        return merge_spans(found)


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Union of overlapping spans of one document (keeping the best score), best first."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.doc_index, s.start)):
        if merged and merged[-1].doc_index == span.doc_index and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Span(
                last.doc_index, last.start, max(last.end, span.end), max(last.score, span.score)
            )
        else:
            merged.append(span)
    return sorted(merged, key=lambda s: -s.score)
