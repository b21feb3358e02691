"""The token-level scanner against transformers' Mamba2 reference, and its mamba_ssm names."""

from __future__ import annotations

import pytest
import torch

from longscan.models.spscanner import (
    MAMBA2_130M,
    MAMBA_SSM_LAYER_NAMES,
    SPScannerConfig,
    SPScannerModel,
)

# The published 130m layout, scaled down in width and depth (two groups, to exercise the
# grouped gated norm the real models share with this code path).
SMALL = SPScannerConfig(
    vocab_size=512, d_model=64, n_layer=3, d_state=16, headdim=16, ngroups=2, chunk_size=16
)


def _randomise(model: torch.nn.Module, seed: int = 0) -> None:
    """Random values everywhere, norms and SSM parameters included (init leaves them 1s)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            values = torch.randn(parameter.shape, generator=generator)
            if name.endswith("A_log"):
                values = values.abs().log1p()  # A = -exp(A_log) in a trained model's range
            elif name.endswith("norm.weight") or name.endswith("norm_f.weight"):
                values = 1 + 0.1 * values
            else:
                values = 0.2 * values
            parameter.copy_(values)


def _reference(config: SPScannerConfig) -> torch.nn.Module:
    """transformers' Mamba2Model with the same shape (its pure-torch path on CPU)."""
    from transformers import Mamba2Config, Mamba2Model

    reference = Mamba2Config(
        vocab_size=config.vocab_size,
        hidden_size=config.d_model,
        num_hidden_layers=config.n_layer,
        state_size=config.d_state,
        head_dim=config.headdim,
        num_heads=config.expand * config.d_model // config.headdim,
        n_groups=config.ngroups,
        expand=config.expand,
        conv_kernel=config.d_conv,
        chunk_size=32,  # another chunking than ours: results must not depend on it
        layer_norm_epsilon=config.norm_eps,
        use_bias=False,
        use_conv_bias=True,
        residual_in_fp32=True,
    )
    return Mamba2Model(reference).eval()


def _as_mamba_ssm(reference_state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """transformers' Mamba2Model names -> mamba_ssm's MambaLMHeadModel names."""
    out = {}
    for name, tensor in reference_state.items():
        name = name.replace("embeddings.", "embedding.")
        out[f"backbone.{name}"] = tensor
    return out


def test_hidden_states_match_transformers_mamba2_and_head_reads_sentence_ends() -> None:
    reference = _reference(SMALL)
    _randomise(reference)
    state = _as_mamba_ssm(reference.state_dict())
    state["binary_head.weight"] = torch.randn(1, SMALL.d_model)
    state["binary_head.bias"] = torch.randn(1)
    state["lm_head.weight"] = state["backbone.embedding.weight"]
    model = SPScannerModel(SMALL).eval()
    model.load_mamba_ssm_state_dict(state)

    input_ids = torch.randint(
        0, SMALL.vocab_size, (2, 150), generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        expected = reference(input_ids).last_hidden_state
        hidden, _ = model.hidden_states(input_ids)
        logits, _ = model(input_ids)
    assert hidden.shape == expected.shape
    assert (hidden - expected).abs().max().item() < 1e-4

    ends = torch.tensor([4, 37, 38, 90, 149])  # the last token of five sentences
    direct = expected[:, ends] @ state["binary_head.weight"][0] + state["binary_head.bias"]
    assert torch.allclose(logits[:, ends], direct, atol=1e-4)


def test_streamed_windows_equal_one_pass() -> None:
    torch.manual_seed(2)
    model = SPScannerModel(SMALL).eval()
    _randomise(model, seed=3)
    input_ids = torch.randint(0, SMALL.vocab_size, (1, 301))
    with torch.no_grad():
        whole, _ = model(input_ids)
        pieces, state = [], None
        for start, stop in ((0, 7), (7, 130), (130, 131), (131, 301)):  # uneven windows
            piece, state = model(input_ids[:, start:stop], state=state, block_tokens=50)
            pieces.append(piece)
    assert torch.allclose(torch.cat(pieces, dim=1), whole, atol=1e-5)


def test_mamba_ssm_names_round_trip_and_every_parameter_is_mapped() -> None:
    model = SPScannerModel(SMALL)
    _randomise(model, seed=4)
    saved = model.mamba_ssm_state_dict()
    assert saved["backbone.layers.0.mixer.conv1d.weight"].shape == (
        SMALL.expand * SMALL.d_model + 2 * SMALL.ngroups * SMALL.d_state,
        1,
        SMALL.d_conv,
    )
    again = SPScannerModel(SMALL)
    again.load_mamba_ssm_state_dict(saved)
    for name, tensor in model.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor), name
    per_layer = {name.split(".", 2)[2] for name in model.state_dict() if name.startswith("layers.")}
    assert per_layer == set(MAMBA_SSM_LAYER_NAMES)


def test_missing_unexpected_and_misshapen_weights_are_all_listed() -> None:
    state = SPScannerModel(SMALL).mamba_ssm_state_dict()
    del state["backbone.layers.1.mixer.A_log"]
    state["backbone.layers.0.mixer.in_proj.bias"] = torch.zeros(3)
    state["binary_head.weight"] = torch.zeros(2, SMALL.d_model)
    with pytest.raises(ValueError) as error:
        SPScannerModel(SMALL).load_mamba_ssm_state_dict(state)
    message = str(error.value)
    assert "missing: backbone.layers.1.mixer.A_log" in message
    assert "unexpected: backbone.layers.0.mixer.in_proj.bias" in message
    assert "binary_head.weight: shape (2, 64), expected (1, 64)" in message


def test_the_published_130m_config_reads_as_the_paper_describes() -> None:
    config = SPScannerConfig.from_mamba_ssm(MAMBA2_130M)
    assert (config.vocab_size, config.d_model, config.n_layer) == (50288, 768, 24)
    assert (config.d_state, config.headdim, config.ngroups, config.expand) == (128, 64, 1, 2)
    model = SPScannerModel(config)
    parameters = sum(p.numel() for p in model.parameters())
    assert 125e6 < parameters < 135e6  # "130m", the LM head tied to the embedding


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"ssm_cfg": {"layer": "Mamba1"}}, "Mamba2"),
        ({"attn_layer_idx": [3]}, "attention"),
        ({"d_intermediate": 1024}, "MLP"),
        ({"ssm_cfg": {"layer": "Mamba2", "D_has_hdim": True}}, "D_has_hdim"),
        ({"ssm_cfg": {"layer": "Mamba2", "norm_before_gate": True}}, "norm_before_gate"),
    ],
)
def test_layouts_it_does_not_implement_are_refused_by_name(change: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        SPScannerConfig.from_mamba_ssm({**MAMBA2_130M, **change})
