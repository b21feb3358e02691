"""Hooks on a causal LM's attention layers: the layers that attend to the whole context,
what they read during a prefill, and a KV-cache press applied as they read.

Layers with sliding-window attention (five in six of Gemma 3's) are left alone, as
``kvpress`` does for Gemma 3's multimodal class: their cache already holds only the last
window, and pressing it would drop the question itself. ``kvpress`` tells the prefill from
decoding by ``cache_position``, which ``transformers`` 5 no longer passes to attention layers;
a pre-hook passes the layer's ``position_ids`` as it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _decoder(model: Any) -> Any:
    """The decoder stack (inside a multimodal model's language model when there is one)."""
    return model.model.language_model if hasattr(model.model, "language_model") else model.model


def global_attention_layers(model: Any) -> list[Any]:
    """The attention modules of the layers that attend to the whole context."""
    return [
        layer.self_attn
        for layer in _decoder(model).layers
        if not getattr(layer.self_attn, "is_sliding", False)
    ]


def pass_cache_position(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A pre-hook: the layer's ``position_ids`` as the ``cache_position`` presses read."""
    if kwargs.get("cache_position") is None and kwargs.get("position_ids") is not None:
        kwargs["cache_position"] = kwargs["position_ids"][0]
    return args, kwargs


@contextmanager
def pressed(press: Any, model: Any) -> Iterator[None]:
    """While open, a prefill of ``model`` compresses its full-attention layers' cache by
    ``press`` (a ``kvpress`` press)."""
    press.post_init_from_model(model)
    decoder = _decoder(model)
    hooks = []
    try:
        for attention in global_attention_layers(model):
            attention.rotary_emb = decoder.rotary_emb  # presses that re-rotate read it here
            hooks.append(attention.register_forward_pre_hook(pass_cache_position, with_kwargs=True))
            hooks.append(attention.register_forward_hook(press.forward_hook, with_kwargs=True))
        yield
    finally:
        for hook in hooks:
            hook.remove()


def cached_positions(cache: Any, model: Any) -> list[int]:
    """Positions held per full-attention layer of ``cache``."""
    return [
        int(cache.layers[attention.layer_idx].keys.shape[-2])
        for attention in global_attention_layers(model)
    ]


_PREFILL_INPUTS = ("hidden_states", "position_embeddings", "position_ids", "cache_position")


@contextmanager
def capturing(model: Any, store: dict[int, dict[str, Any]]) -> Iterator[None]:
    """While open, each full-attention layer's inputs (those a press reads) go to
    ``store[layer_idx]``."""

    def keep(module: Any, args: tuple, kwargs: dict) -> None:
        pass_cache_position(module, args, kwargs)
        store[module.layer_idx] = {k: kwargs[k] for k in _PREFILL_INPUTS if k in kwargs}

    hooks = [
        attention.register_forward_pre_hook(keep, with_kwargs=True)
        for attention in global_attention_layers(model)
    ]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()
