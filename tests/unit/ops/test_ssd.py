"""Parity tests: chunked SSD and the recurrent step against the naive recurrence."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from longscan.ops.ssd import segsum, ssd_chunked, ssd_ref, ssd_step


def make_inputs(b, length, h, p, g, n, seed=0, requires_grad=False):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, length, h, p, generator=gen)
    dt = F.softplus(torch.randn(b, length, h, generator=gen) - 1.0)
    A = -torch.empty(h).uniform_(0.5, 8.0, generator=gen)
    B = torch.randn(b, length, g, n, generator=gen)
    C = torch.randn(b, length, g, n, generator=gen)
    D = torch.randn(h, generator=gen)
    s0 = torch.randn(b, h, p, n, generator=gen)
    tensors = [x, dt, A, B, C, D, s0]
    if requires_grad:
        for t in tensors:
            t.requires_grad_(True)
    return tensors


SHAPES = [
    # b, l, h, p, g, n, chunk
    (2, 1, 2, 4, 1, 8, 16),
    (2, 37, 4, 8, 1, 16, 16),
    (1, 200, 4, 8, 2, 16, 64),
    (3, 65, 6, 4, 3, 8, 8),
    (1, 64, 2, 4, 2, 4, 64),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("with_state", [False, True])
def test_chunked_matches_ref(shape, with_state):
    b, length, h, p, g, n, cs = shape
    x, dt, A, B, C, D, s0 = make_inputs(b, length, h, p, g, n)
    s0 = s0 if with_state else None
    y_ref, st_ref = ssd_ref(x, dt, A, B, C, D, initial_state=s0)
    y, st = ssd_chunked(x, dt, A, B, C, D, chunk_size=cs, initial_state=s0)
    assert y.shape == (b, length, h, p) and st.shape == (b, h, p, n)
    assert (y - y_ref).abs().max() < 1e-4
    assert (st - st_ref).abs().max() < 1e-4


def test_chunked_without_d_and_empty_sequence():
    x, dt, A, B, C, _, s0 = make_inputs(1, 37, 4, 8, 2, 8)
    y_ref, _ = ssd_ref(x, dt, A, B, C)
    y, _ = ssd_chunked(x, dt, A, B, C, chunk_size=16)
    assert (y - y_ref).abs().max() < 1e-4
    y0, st0 = ssd_chunked(x[:, :0], dt[:, :0], A, B[:, :0], C[:, :0], initial_state=s0)
    assert y0.shape == (1, 0, 4, 8) and torch.equal(st0, s0)


def test_split_sequence_with_carried_state_equals_one_pass():
    x, dt, A, B, C, D, _ = make_inputs(2, 150, 4, 8, 1, 16)
    y_full, st_full = ssd_chunked(x, dt, A, B, C, D, chunk_size=32)
    y1, st = ssd_chunked(x[:, :53], dt[:, :53], A, B[:, :53], C[:, :53], D, 32)
    y2, st = ssd_chunked(x[:, 53:], dt[:, 53:], A, B[:, 53:], C[:, 53:], D, 32, st)
    assert (torch.cat([y1, y2], 1) - y_full).abs().max() < 1e-4
    assert (st - st_full).abs().max() < 1e-4


@pytest.mark.parametrize("g", [1, 2])
def test_step_loop_matches_ref(g):
    x, dt, A, B, C, D, s0 = make_inputs(2, 37, 4, 8, g, 16)
    y_ref, st_ref = ssd_ref(x, dt, A, B, C, D, initial_state=s0)
    st, ys = s0, []
    for t in range(x.size(1)):
        y_t, st = ssd_step(x[:, t], dt[:, t], A, B[:, t], C[:, t], D, st)
        ys.append(y_t)
    assert (torch.stack(ys, 1) - y_ref).abs().max() < 1e-4
    assert (st - st_ref).abs().max() < 1e-4


@pytest.mark.parametrize("g", [1, 2])
def test_gradients_match_ref(g):
    ref_in = make_inputs(2, 37, 4, 8, g, 8, seed=1, requires_grad=True)
    fast_in = make_inputs(2, 37, 4, 8, g, 8, seed=1, requires_grad=True)
    gen = torch.Generator().manual_seed(2)
    w_y = torch.randn(2, 37, 4, 8, generator=gen)
    w_s = torch.randn(2, 4, 8, 8, generator=gen)

    x, dt, A, B, C, D, s0 = ref_in
    y, st = ssd_ref(x, dt, A, B, C, D, initial_state=s0)
    ((y * w_y).sum() + (st * w_s).sum()).backward()
    x, dt, A, B, C, D, s0 = fast_in
    y, st = ssd_chunked(x, dt, A, B, C, D, chunk_size=16, initial_state=s0)
    ((y * w_y).sum() + (st * w_s).sum()).backward()

    for name, a, b in zip(["x", "dt", "A", "B", "C", "D", "s0"], ref_in, fast_in, strict=True):
        assert torch.allclose(a.grad, b.grad, rtol=1e-3, atol=1e-3), name
        assert torch.isfinite(b.grad).all(), name


def test_segsum_is_stable_and_masked():
    x = -torch.rand(2, 64) * 50  # strongly decaying: naive cumsum differences would cancel
    s = segsum(x)
    upper = torch.ones(64, 64, dtype=torch.bool).triu(1)
    assert torch.all(s[:, upper] == float("-inf"))
    assert torch.all(s.diagonal(dim1=-2, dim2=-1) == 0)
    assert torch.allclose(s[:, 10, 3], x[:, 4:11].sum(-1))
    assert torch.isfinite(torch.exp(s)).all()


def test_shape_errors():
    x, dt, A, B, C, D, s0 = make_inputs(1, 5, 4, 8, 1, 8)
    with pytest.raises(ValueError):
        ssd_chunked(x, dt[:, :3], A, B, C, D)
    with pytest.raises(ValueError):
        ssd_chunked(x, dt, A, B.expand(1, 5, 3, 8), C.expand(1, 5, 3, 8), D)  # 4 % 3 != 0
    with pytest.raises(ValueError):
        ssd_ref(x, dt, A, B, C, D, initial_state=s0[..., :4])
    with pytest.raises(ValueError):
        ssd_chunked(x, dt, A, B, C, D, chunk_size=0)
