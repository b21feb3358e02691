"""A prompt read into a KV cache, then continued: scored or decoded greedily.

Positions are passed explicitly, so a cache that a press has shortened
(``incontext.compression``) is continued at the text's true positions, not at its length.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from kvpress import ScorerPress

    from longscan.incontext.lm import CausalLM


@dataclass
class Reading:
    """What a model has read: its cache, the tokens read so far (the next position), and,
    when asked for, the inputs of each full-attention layer's prefill (to compress later)."""

    cache: Any
    length: int
    prefill_inputs: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)

    def fork(self) -> Reading:
        """An independent copy to continue (the prefill inputs are shared, not copied)."""
        return Reading(copy.deepcopy(self.cache), self.length, self.prefill_inputs)


def read(
    lm: CausalLM,
    ids: Sequence[int],
    press: ScorerPress | None = None,
    keep_prefill_inputs: bool = False,
) -> Reading:
    """Prefill ``ids``; with ``press``, its full-attention layers' cache is compressed as it is
    read; with ``keep_prefill_inputs``, what a press needs to compress it afterwards is kept
    (``compression.compress``), so one prefill serves every press and ratio."""
    import torch
    from transformers import DynamicCache

    from longscan.incontext.hooks import capturing, pressed

    cache = DynamicCache(config=lm.model.config)
    reading = Reading(cache, 0)
    inputs = {
        "input_ids": torch.tensor([list(ids)], device=lm.device),
        "position_ids": torch.arange(len(ids), device=lm.device)[None],
        "past_key_values": cache,
        # the last token's logits only: a 262k vocabulary over every position costs more
        # than the rest of the network
        "logits_to_keep": 1,
    }
    with torch.inference_mode():
        if press is not None:
            with pressed(press, lm.model):
                lm.model(**inputs)
        elif keep_prefill_inputs:
            with capturing(lm.model, reading.prefill_inputs):
                lm.model(**inputs)
        else:
            lm.model(**inputs)
    reading.length = len(ids)
    return reading


def continue_reading(lm: CausalLM, reading: Reading, ids: Sequence[int]) -> torch.Tensor:
    """Feed ``ids`` after what ``reading`` holds (extending it): their next-token
    log-probabilities ``(len(ids), vocab)``."""
    import torch

    tokens = torch.tensor([list(ids)], device=lm.device)
    positions = torch.arange(reading.length, reading.length + len(ids), device=lm.device)[None]
    with torch.inference_mode():
        logits = lm.model(
            input_ids=tokens, position_ids=positions, past_key_values=reading.cache
        ).logits
    reading.length += len(ids)
    return torch.log_softmax(logits[0].float(), dim=-1)


def continuation_logprob(lm: CausalLM, reading: Reading, prompt: Sequence[int], text: str) -> float:
    """Mean log-probability per token of ``text`` right after ``prompt`` (both read after
    ``reading``, which they extend)."""
    import torch

    target = lm.encode(text)
    log_probs = continue_reading(lm, reading, [*prompt, *target])
    rows = torch.arange(len(prompt) - 1, len(prompt) + len(target) - 1)
    return float(log_probs[rows, torch.tensor(target)].mean())


def greedy(
    lm: CausalLM,
    reading: Reading,
    prompt: Sequence[int],
    max_new_tokens: int,
    finished: Callable[[str], bool] | None = None,
    stop_at_eos: bool = True,
) -> str:
    """The greedy continuation of ``prompt`` (read after ``reading``, which it extends), up
    to an end-of-sequence token (unless ``stop_at_eos`` is false), ``max_new_tokens``, or
    ``finished(text so far)``."""
    stops = lm.eos_token_ids() if stop_at_eos else set()
    log_probs = continue_reading(lm, reading, prompt)
    out: list[int] = []
    text = ""
    for _ in range(max_new_tokens):
        token = int(log_probs[-1].argmax())
        if token in stops:
            break
        out.append(token)
        text = str(lm.tokenizer.decode(out, skip_special_tokens=True))
        if finished is not None and finished(text):
            break
        log_probs = continue_reading(lm, reading, [token])
    return text
