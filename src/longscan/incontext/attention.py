"""Attention-based document ranking (SEEDS.md §3): the ``[DOC i]`` blocks of a prompt ranked by
the attention the question's tokens pay them, summed over layers, heads and question tokens.

The blocks are read into the KV cache first; only the question's tokens are then run with
attentions returned, so the weights held are ``question x context`` per layer, never
``context x context``. Raw sums favour the first blocks whatever the question (attention
sinks: the first tokens draw most of every head's weight), so each score is calibrated: the
attention the same prompt pays a block under a content-free question (:data:`CALIBRATION`)
is subtracted, as calibrated-attention methods do ("found in the middle"). Passages that do
not fit one window are read in groups, each group its own prompt (their sums are then
compared across groups as they are).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from longscan.documents import Document
from longscan.incontext.docids import Format, Passage, build_prompt

if TYPE_CHECKING:
    from longscan.incontext.lm import CausalLM


CALIBRATION = "N/A"
"""The content-free question whose attention is subtracted from the real one's."""


class AttentionRanker:
    """Scores passages by the question's cumulative attention to their ``[DOC i]`` blocks.

    Args:
        lm: the loaded model (its attention must be the eager kind, as ``load_causal_lm``
            loads it, so that weights are returned).
        window_tokens: prompt tokens per group of passages (default ``lm.DEFAULT_WINDOW_TOKENS``).
    """

    def __init__(self, lm: CausalLM, window_tokens: int | None = None) -> None:
        self.lm = lm
        self.window_tokens = lm.window_tokens(window_tokens, reserve=256)  # question, format

    def _groups(
        self, documents: Sequence[Document], passages: Sequence[Passage]
    ) -> list[list[int]]:
        """Consecutive passages whose text fits a window (a passage alone always does)."""
        tag = 6  # "[DOC i] " and the blank line after the block
        sizes = [
            len(self.lm.encode(documents[p.doc_index].text[p.start : p.end])) + tag
            for p in passages
        ]
        groups: list[list[int]] = []
        total = 0
        for index, size in enumerate(sizes):
            if groups and total + size <= self.window_tokens:
                groups[-1].append(index)
                total += size
            else:
                groups.append([index])
                total = size
        return groups

    def _attention_mass(self, cache: object, ids: list[int], context: int) -> np.ndarray:
        """Attention from ``ids`` (read after ``cache``) to each of the ``context`` cached
        positions, summed over layers and heads, averaged over the tokens of ``ids`` (each
        token's row renormalised over the context first)."""
        import torch

        tokens = torch.tensor([ids], device=self.lm.device)
        with torch.inference_mode():
            out = self.lm.model(
                input_ids=tokens, past_key_values=cache, use_cache=True, output_attentions=True
            )
        mass = torch.zeros(context, device=self.lm.device)
        for layer in out.attentions:  # (1, heads, len(ids), keys)
            rows = layer[0, :, :, :context].float()
            mass += (rows / rows.sum(-1, keepdim=True).clamp_min(1e-12)).sum(dim=(0, 1))
        return (mass / len(ids)).cpu().numpy()

    def _group_scores(
        self, question: str, documents: Sequence[Document], passages: Sequence[Passage]
    ) -> np.ndarray:
        import copy

        import torch
        from transformers import DynamicCache

        prompt = build_prompt(question, documents, passages, Format.ID)
        head = prompt.text[: prompt.question_start]
        encoding = self.lm.tokenizer(head, return_offsets_mapping=True)
        context = encoding["input_ids"]
        starts = np.asarray([a for a, _ in encoding["offset_mapping"]])
        ends = np.asarray([b for _, b in encoding["offset_mapping"]])
        tail = prompt.text[prompt.question_start :]
        baseline = tail.replace(f"Question: {question}", f"Question: {CALIBRATION}", 1)
        with torch.inference_mode():
            cache = DynamicCache()
            tokens = torch.tensor([context], device=self.lm.device)
            self.lm.model(input_ids=tokens, past_key_values=cache, use_cache=True)
        question_mass, baseline_mass = (
            self._attention_mass(copy.deepcopy(cache), self.lm.encode(text), len(context))
            for text in (tail, baseline)
        )
        mass = question_mass - baseline_mass
        scores = np.zeros(len(passages))
        for number, (block_start, block_end) in enumerate(prompt.blocks):
            inside = (starts >= block_start) & (ends <= block_end) & (ends > starts)
            scores[number] = float(mass[inside].sum())
        return scores

    def scores(
        self, question: str, documents: Sequence[Document], passages: Sequence[Passage]
    ) -> np.ndarray:
        """``(len(passages),)`` cumulative attention, higher first."""
        result = np.zeros(len(passages))
        for group in self._groups(documents, passages):
            chosen = [passages[i] for i in group]
            result[group] = self._group_scores(question, documents, chosen)
        return result
