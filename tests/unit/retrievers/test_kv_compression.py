"""KV-cache presses (kvpress, and scanner-guided eviction) on the packaged Gemma 3 270M."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from longscan.incontext.lm import CausalLM


@pytest.fixture(scope="module")
def lm() -> CausalLM:
    from longscan.incontext.lm import load_causal_lm

    return load_causal_lm()


@pytest.fixture(scope="module")
def prompt_ids(lm: CausalLM, data_dir: Path) -> list[int]:
    from longscan.bench.builders import build_squad_long

    (item,) = build_squad_long("dev", 250, max_items=1, seed=0, data_dir=data_dir)
    text = f"{item.documents[0].text}\n\nQuestion: {item.query}\n"
    return list(lm.tokenizer.encode(text))


def _scanner_press(ratio: float, count: int) -> object:
    from longscan.incontext.compression import make_press

    press = make_press("scanner", ratio)
    press.prioritise(np.random.default_rng(0).random(count))  # type: ignore[attr-defined]
    return press


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.75])
def test_each_press_shrinks_the_full_attention_cache_to_its_ratio(
    lm: CausalLM, prompt_ids: list[int], ratio: float
) -> None:
    from longscan.incontext.compression import PRESS_NAMES, make_press
    from longscan.incontext.decoding import read
    from longscan.incontext.hooks import cached_positions

    full = read(lm, prompt_ids)
    assert cached_positions(full.cache, lm.model) == [len(prompt_ids)] * 3  # Gemma 3: 3 of 18
    expected = int(len(prompt_ids) * (1 - ratio))
    for name in PRESS_NAMES:
        press = (
            _scanner_press(ratio, len(prompt_ids)) if name == "scanner" else make_press(name, ratio)
        )
        reading = read(lm, prompt_ids, press)  # type: ignore[arg-type]
        assert cached_positions(reading.cache, lm.model) == [expected] * 3, name
        for index, layer in enumerate(reading.cache.layers):  # sliding layers keep their window
            if lm.model.config.layer_types[index] == "sliding_attention":
                assert layer.keys.shape == full.cache.layers[index].keys.shape
        assert reading.length == len(prompt_ids)


def test_compressing_after_the_prefill_gives_the_cache_a_press_gives_during_it(
    lm: CausalLM, prompt_ids: list[int]
) -> None:
    import torch

    from longscan.incontext.compression import compress, make_press
    from longscan.incontext.decoding import read

    full = read(lm, prompt_ids, keep_prefill_inputs=True)
    for name in ("knorm", "snapkv"):
        during = read(lm, prompt_ids, make_press(name, 0.5))
        after = compress(full, make_press(name, 0.5), lm.model)
        for ours, theirs in zip(after.cache.layers, during.cache.layers, strict=True):
            assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)
    assert full.cache.layers[5].keys.shape[-2] == len(prompt_ids)  # the original is untouched


def test_the_scanner_press_keeps_exactly_the_highest_priority_positions(
    lm: CausalLM, prompt_ids: list[int]
) -> None:
    import torch

    from longscan.incontext.compression import compress
    from longscan.incontext.decoding import read

    full = read(lm, prompt_ids, keep_prefill_inputs=True)
    press = _scanner_press(0.6, len(prompt_ids))
    kept = torch.topk(press.priorities, int(len(prompt_ids) * 0.4)).indices  # type: ignore[attr-defined]
    compressed = compress(full, press, lm.model)  # type: ignore[arg-type]
    for index in (5, 11, 17):
        expected = full.cache.layers[index].keys[:, :, kept]
        assert torch.equal(compressed.cache.layers[index].keys, expected)
    wrong = _scanner_press(0.5, len(prompt_ids) - 1)
    with pytest.raises(ValueError, match="token priorities for a prompt of"):
        compress(full, wrong, lm.model)  # type: ignore[arg-type]


def test_token_priorities_follow_sentences_and_always_keep_the_rest() -> None:
    from longscan.incontext.compression import token_priorities

    tokens = np.array([[0, 3], [3, 8], [8, 12], [12, 15], [15, 20], [20, 24]])
    keep = np.array([True, False, False, False, False, True])
    sentences = [(3, 12, 0.9), (12, 20, -0.4)]
    priorities = token_priorities(tokens, sentences, keep)
    assert priorities[1] == priorities[2] == 0.9
    assert priorities[3] == priorities[4] == -0.4
    assert priorities[0] == priorities[5] > 0.9
    gap = token_priorities(np.array([[0, 2], [2, 4]]), [(0, 2, 1.0)], np.zeros(2, bool))
    assert gap[1] < gap[0]  # a token outside every sentence ranks last


def test_press_names_and_ratios_are_checked() -> None:
    from longscan.incontext.compression import make_press

    with pytest.raises(ValueError, match="unknown press 'h2o'"):
        make_press("h2o", 0.5)
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        make_press("knorm", 1.0)
