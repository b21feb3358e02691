"""KV-cache compression for in-context reading (SEEDS.md §3): ``kvpress``'s presses, and a
press of our own that keeps the cache entries of the sentences the scanner ranks highest.

A press acts while the prompt is prefilled: each full-attention layer's keys and values are
scored and only the best ``1 - compression_ratio`` of the positions stay in the cache; the
answer is then decoded from what is left (``incontext.hooks`` applies it; layers with a
sliding window are left alone).

``kvpress`` pins ``transformers<5.3`` in its metadata but runs on 5.x with those hooks;
``scripts/setup.sh`` installs it without its pins (the ``[local-llm]`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.incontext.hooks import global_attention_layers

try:
    from kvpress import ScorerPress
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        'KV-cache presses need kvpress: pip install "longscan[presses]" (which takes the '
        "older transformers kvpress pins), or pip install --no-deps kvpress==0.5.4 beside a "
        "newer one, as scripts/setup.sh does",
        name=error.name,
    ) from error

if TYPE_CHECKING:
    import torch

    from longscan.incontext.decoding import Reading

PRESS_NAMES = ("knorm", "snapkv", "streaming-llm", "scanner")
"""The presses compared: key norm (question-blind), SnapKV (attention of the prompt's last
64 tokens, which hold the question), StreamingLLM (sink and most recent tokens) and
scanner-guided eviction (:class:`ScannerPress`)."""


def make_press(name: str, ratio: float) -> ScorerPress:
    """The press called ``name`` (see :data:`PRESS_NAMES`) removing ``ratio`` of the cache.

    Raises:
        ValueError: an unknown name or a ratio outside ``[0, 1)``.
    """
    if not 0 <= ratio < 1:
        raise ValueError(f"the compression ratio must lie in [0, 1), not {ratio}")
    if name == "scanner":
        return ScannerPress(compression_ratio=ratio)
    from kvpress import KnormPress, SnapKVPress, StreamingLLMPress

    kinds: dict[str, Callable[..., ScorerPress]] = {
        "knorm": KnormPress,
        "snapkv": SnapKVPress,
        "streaming-llm": StreamingLLMPress,
    }
    if name not in kinds:
        raise ValueError(f"unknown press {name!r}; choose one of {', '.join(PRESS_NAMES)}")
    return kinds[name](compression_ratio=ratio)


@dataclass
class ScannerPress(ScorerPress):
    """Keeps the cache entries of the prompt's most valuable tokens, as set by
    :meth:`prioritise` before the prefill: the tokens of the sentences the scanner ranks
    highest, whole sentences first, with the tokens outside the passages (instructions, the
    question) always kept. Every layer and head keeps the same positions."""

    compression_ratio: float = 0.0
    priorities: torch.Tensor | None = field(default=None, repr=False)

    def prioritise(self, priorities: np.ndarray) -> None:
        """One priority per prompt token (higher is kept first)."""
        import torch

        self.priorities = torch.as_tensor(priorities, dtype=torch.float32)

    def score(
        self,
        module: Any,
        hidden_states: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        attentions: torch.Tensor,
        kwargs: dict,
    ) -> torch.Tensor:
        if self.priorities is None or len(self.priorities) != keys.shape[2]:
            raise ValueError(
                f"the scanner press has {0 if self.priorities is None else len(self.priorities)}"
                f" token priorities for a prompt of {keys.shape[2]} tokens; call prioritise()"
            )
        batch, heads, _, _ = keys.shape
        return self.priorities.to(keys.device).expand(batch, heads, -1)


def token_priorities(
    token_spans: np.ndarray, scored_spans: Sequence[tuple[int, int, float]], keep: np.ndarray
) -> np.ndarray:
    """Each token's priority for :class:`ScannerPress`.

    Args:
        token_spans: ``(t, 2)`` character span of each prompt token.
        scored_spans: ``(start, end, score)`` of each scored sentence, in prompt characters.
        keep: ``(t,)`` tokens always kept (outside every passage: instructions, the
            question, the ``[DOC i]`` tags).

    A token takes the score of the sentence it starts in; tokens of passages outside every
    scored sentence (blank lines) take the lowest score.
    """
    scores = np.array([score for _, _, score in scored_spans], dtype=np.float64)
    floor = float(scores.min()) - 1 if len(scores) else 0.0
    priorities = np.full(len(token_spans), floor)
    starts = np.array([start for start, _, _ in scored_spans], dtype=np.int64)
    ends = np.array([end for _, end, _ in scored_spans], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends, scores = starts[order], ends[order], scores[order]
    position = np.searchsorted(starts, token_spans[:, 0], side="right") - 1
    inside = (position >= 0) & (token_spans[:, 0] < ends[np.clip(position, 0, None)])
    priorities[inside] = scores[position[inside]]
    ceiling = max(float(priorities.max(initial=floor)), floor) + 1
    priorities[keep] = ceiling
    return priorities


def compress(reading: Reading, press: ScorerPress, model: Any) -> Reading:
    """A copy of ``reading`` (read with ``keep_prefill_inputs``) compressed by ``press``, as
    if the press had been on during the prefill: a press acts on each layer's cache after the
    layer has read the whole prompt, so compressing afterwards gives the same cache."""
    if not reading.prefill_inputs:
        raise ValueError("the reading kept no prefill inputs; read it with keep_prefill_inputs")
    import torch

    compressed = reading.fork()
    press.post_init_from_model(model)
    with torch.inference_mode():
        for attention in global_attention_layers(model):
            inputs = dict(reading.prefill_inputs[attention.layer_idx])
            inputs["past_key_values"] = compressed.cache
            press.forward_hook(attention, [], inputs, (None, None))
    return compressed
