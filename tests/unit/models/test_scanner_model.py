"""Scanner network: streaming == one pass, padding, batching, config round-trip."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import torch.nn.functional as F

from longscan.models import Mamba2Mixer, ScannerConfig, ScannerModel
from longscan.models.scanner import causal_conv

D_IN = 16


def tiny_config(**overrides) -> ScannerConfig:
    kwargs = dict(
        d_input=D_IN, d_model=32, n_layers=2, d_state=8, headdim=16, chunk_size=16, n_features=2
    )
    kwargs.update(overrides)
    return ScannerConfig(**kwargs)


@pytest.fixture(scope="session")
def _models():
    torch.manual_seed(0)
    models = {bi: ScannerModel(tiny_config(bidirectional=bi)).eval() for bi in (False, True)}
    models["skip"] = ScannerModel(tiny_config(feature_skip=True)).eval()
    models["twice"] = ScannerModel(tiny_config(read_twice=True)).eval()
    with torch.no_grad():  # a trained-looking wide path, so the tests see it act
        models["skip"].prior.weight.normal_()
    return models


@pytest.fixture(
    params=[False, True, "skip", "twice"],
    ids=["causal", "bidirectional", "feature-skip", "read-twice"],
)
def model(request, _models):
    return copy.deepcopy(_models[request.param])


def make_doc(b=2, length=37, seed=0):
    gen = torch.Generator().manual_seed(seed)
    sentences = F.normalize(torch.randn(b, length, D_IN, generator=gen), dim=-1)
    query = F.normalize(torch.randn(b, D_IN, generator=gen), dim=-1)
    features = torch.rand(b, length, 2, generator=gen)
    return sentences, query, features


# -- mixer ---------------------------------------------------------------------------------


def test_shift_conv_equals_conv1d():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 37, 6, generator=gen)
    w, bias = torch.randn(6, 4, generator=gen), torch.randn(6, generator=gen)
    out, _ = causal_conv(x, w, bias, torch.zeros(2, 6, 3))
    ref = F.conv1d(x.transpose(1, 2), w[:, None], bias, padding=3, groups=6)[..., :37]
    assert (out - ref.transpose(1, 2)).abs().max() < 1e-5


@pytest.mark.parametrize("split", [1, 16, 30])
def test_mixer_carried_state_equals_one_pass(split):
    torch.manual_seed(0)
    mixer = Mamba2Mixer(tiny_config(n_groups=2)).eval()
    hidden = torch.randn(2, 37, 32)
    full, (conv_f, ssm_f) = mixer(hidden)
    a, state = mixer(hidden[:, :split])
    b, (conv, ssm) = mixer(hidden[:, split:], state=state)
    assert (torch.cat([a, b], 1) - full).abs().max() < 1e-4
    assert (conv - conv_f).abs().max() < 1e-6 and (ssm - ssm_f).abs().max() < 1e-4


def test_mixer_step_equals_forward():
    torch.manual_seed(0)
    mixer = Mamba2Mixer(tiny_config()).eval()
    hidden = torch.randn(2, 37, 32)
    full, (conv_f, ssm_f) = mixer(hidden)
    state, outs = mixer.allocate_state(2), []
    for t in range(37):
        out, state = mixer.step(hidden[:, t], state)
        outs.append(out)
    assert (torch.stack(outs, 1) - full).abs().max() < 1e-4
    assert (state[1] - ssm_f).abs().max() < 1e-4


def test_mixer_init_like_mamba2():
    mixer = Mamba2Mixer(tiny_config(d_model=256, headdim=8))
    A = torch.exp(mixer.A_log)
    dt = F.softplus(mixer.dt_bias)
    assert ((A >= 1) & (A <= 16)).all()
    assert ((dt >= 1e-3 - 1e-6) & (dt <= 1e-1 + 1e-6)).all()
    assert torch.equal(mixer.D.detach(), torch.ones_like(mixer.D))


# -- model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 7, 16, 36, 100])
def test_scan_equals_full_pass(model, window):
    sentences, query, features = make_doc(length=37)
    with torch.no_grad():
        full = model(sentences, query, features).logits
    assert full.shape == (2, 37)
    streamed = model.scan(sentences, query, features, window=window)
    assert (streamed - full).abs().max() < 1e-4


@pytest.mark.parametrize("windows", [[37], [1, 36], [5, 16, 16], [20, 17]])
@pytest.mark.parametrize("kind", [False, "skip"], ids=["causal", "feature-skip"])
def test_causal_forward_with_state_equals_full_pass(_models, windows, kind):
    model = _models[kind]
    sentences, query, features = make_doc(length=37)
    with torch.no_grad():
        full = model(sentences, query, features).logits
        state, parts, start = model.allocate_state(2), [], 0
        for w in windows:
            sl = slice(start, start + w)
            out = model(sentences[:, sl], query, features[:, sl], state=state)
            parts.append(out.logits)
            state, start = out.state, start + w
    assert state.n_steps == 38
    assert (torch.cat(parts, 1) - full).abs().max() < 1e-4


@pytest.mark.parametrize("kind", [True, "twice"], ids=["bidirectional", "read-twice"])
def test_whole_document_models_reject_state(_models, kind):
    model = _models[kind]
    sentences, query, features = make_doc(length=5)
    with pytest.raises(ValueError):
        model.allocate_state(2)
    state = _models[False].allocate_state(2)
    with pytest.raises(ValueError):
        model(sentences, query, features, state=state)


def test_padding_does_not_change_real_logits(model):
    sentences, query, features = make_doc(b=3, length=37)
    lengths = [37, 20, 1]
    mask = torch.arange(37)[None] < torch.tensor(lengths)[:, None]  # (3, 37)
    garbage = torch.randn(3, 37, D_IN) * 5
    padded = torch.where(mask[..., None], sentences, garbage)
    with torch.no_grad():
        batched = model(padded, query, features, mask=mask).logits
        scanned = model.scan(padded, query, features, mask=mask, window=8)
        for i, n in enumerate(lengths):
            single = model(sentences[i : i + 1, :n], query[i : i + 1], features[i : i + 1, :n])
            assert (batched[i, :n] - single.logits[0]).abs().max() < 1e-4
            assert (scanned[i, :n] - single.logits[0]).abs().max() < 1e-4
    assert torch.isneginf(batched[~mask]).all() and torch.isneginf(scanned[~mask]).all()


def test_padding_keeps_carried_state(_models):
    model = _models[False]
    sentences, query, features = make_doc(b=2, length=30)
    mask = torch.ones(2, 30, dtype=torch.bool)
    mask[1, 12:] = False  # item 1 ends inside the first window
    with torch.no_grad():
        out = model(sentences, query, features, mask=mask)
        ref = model(sentences[1:, :12], query[1:], features[1:, :12])
    for (conv, ssm), (conv_r, ssm_r) in zip(out.state.layers, ref.state.layers, strict=True):
        assert (conv[1] - conv_r[0]).abs().max() < 1e-5
        assert (ssm[1] - ssm_r[0]).abs().max() < 1e-4


def test_batched_equals_single(model):
    sentences, query, features = make_doc(b=3, length=37)
    with torch.no_grad():
        batched = model(sentences, query, features).logits
        for i in range(3):
            single = model(sentences[i : i + 1], query[i : i + 1], features[i : i + 1]).logits
            assert (batched[i] - single[0]).abs().max() < 1e-4


def test_left_padding_is_rejected(_models):
    sentences, query, features = make_doc(length=5)
    mask = torch.tensor([[False, True, True, True, True], [True] * 5])
    with pytest.raises(ValueError):
        _models[False](sentences, query, features, mask=mask)


@pytest.mark.parametrize("kind", [False, "twice"], ids=["causal", "read-twice"])
def test_which_sentences_a_logit_sees(_models, kind):
    model = _models[kind]
    sentences, query, features = make_doc(length=37)
    changed = sentences.clone()
    changed[:, 20] += 1.0
    with torch.no_grad():
        a = model(sentences, query, features).logits
        b = model(changed, query, features).logits
        c = model(sentences, -query, features).logits
    earlier = (a[:, :20] - b[:, :20]).abs().max()
    if kind == "twice":
        assert earlier > 1e-4  # the second reading starts from a state that saw sentence 20
    else:
        assert earlier < 1e-6  # causal: a logit sees only what precedes it
    assert (a[:, 20:] - b[:, 20:]).abs().max() > 1e-4
    assert (a - c).abs().max() > 1e-4


def test_read_twice_differs_from_reading_once(_models):
    once, twice = _models[False], copy.deepcopy(_models["twice"])
    twice.load_state_dict(once.state_dict())  # the same weights
    sentences, query, features = make_doc(length=37)
    with torch.no_grad():
        difference = (
            twice(sentences, query, features).logits - once(sentences, query, features).logits
        )
    assert difference.abs().max() > 1e-4


def test_backward_reaches_every_parameter(model):
    model.train()
    sentences, query, features = make_doc(length=37)
    mask = torch.ones(2, 37, dtype=torch.bool)
    mask[0, 30:] = False
    logits = model(sentences, query, features, mask=mask).logits
    labels = torch.zeros_like(logits)
    F.binary_cross_entropy_with_logits(logits[mask], labels[mask]).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_input_validation(_models):
    model = _models[False]
    sentences, query, features = make_doc(length=5)
    with pytest.raises(ValueError):
        model(sentences, query)  # n_features=2 needs features
    with pytest.raises(ValueError):
        model(sentences[..., :8], query, features)
    with pytest.raises(ValueError):
        model(sentences, query[:1], features)
    with pytest.raises(ValueError):
        model.scan(sentences, query, features, window=0)


# -- config --------------------------------------------------------------------------------


def test_feature_skip_adds_a_linear_score_of_the_match(_models):
    """The wide path is exactly ``prior([cos, features])`` added to the deep logits."""
    skip = _models["skip"]
    deep = copy.deepcopy(skip)
    with torch.no_grad():
        deep.prior.weight.zero_()
        deep.prior.bias.zero_()
    sentences, query, features = make_doc(length=20)
    cos = F.cosine_similarity(sentences, query[:, None], dim=-1)[..., None]
    expected = skip.prior(torch.cat([cos, features], dim=-1)).squeeze(-1)
    difference = skip.scan(sentences, query, features) - deep.scan(sentences, query, features)
    assert torch.allclose(difference, expected, atol=1e-5)
    assert expected.abs().max() > 1e-2


def test_config_round_trip():
    cfg = tiny_config(bidirectional=True, dropout=0.1)
    again = ScannerConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    assert cfg.d_inner == 64 and cfg.n_heads == 4 and cfg.conv_dim == 64 + 2 * 8


@pytest.mark.parametrize(
    "bad",
    [
        dict(headdim=24),  # d_inner 64 not divisible
        dict(n_groups=3),  # 4 heads not divisible
        dict(d_model=0),
        dict(dropout=1.0),
        dict(dt_min=0.2, dt_max=0.1),
        dict(n_features=-1),
        dict(bidirectional=True, read_twice=True),
    ],
)
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        tiny_config(**bad)


def test_config_rejects_unknown_keys():
    with pytest.raises(ValueError):
        ScannerConfig.from_dict({"d_model": 32, "n_layer": 2})


def test_windowed_gradients_equal_one_block(model):
    sentences, query, features = make_doc(length=37)
    grads = []
    for window in (5, 1024):
        model.zero_grad()
        model(sentences, query, features, window=window).logits.square().sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for name, g in grads[0].items():
        assert torch.allclose(g, grads[1][name], rtol=1e-3, atol=1e-5), name


def test_empty_document(model):
    sentences, query, features = make_doc(length=0)
    out = model(sentences, query, features)
    assert out.logits.shape == (2, 0)
    assert model.scan(sentences, query, features).shape == (2, 0)
