"""Mamba-2 state-space duality (SSD) scan in plain PyTorch, each fast path beside its oracle.

The recurrence, per batch item, head ``h`` and step ``t`` (state ``S`` is ``(p, n)``)::

    S_t = exp(dt_t * A) * S_{t-1} + dt_t * outer(x_t, B_t)
    y_t = S_t @ C_t + D * x_t

Shapes (the Mamba-2 convention):

- ``x``: ``(b, l, h, p)`` inputs, ``h`` heads of ``p`` channels (``headdim``).
- ``dt``: ``(b, l, h)`` step sizes, already passed through softplus (positive).
- ``A``: ``(h,)`` negative decay rates (``-exp(A_log)``).
- ``B``, ``C``: ``(b, l, g, n)``; ``g`` groups (``ngroups``) shared by ``h // g`` heads each.
- ``D``: ``(h,)`` skip connection, optional.
- state: ``(b, h, p, n)``.

Functions:

- :func:`ssd_ref`: the naive per-step loop; slow, obviously right, the test oracle.
- :func:`ssd_chunked`: the SSD block form: within a chunk a masked quadratic
  (attention-like) product; between chunks the state is passed by a short loop.
  Linear in ``l``, differentiable, any length.
- :func:`ssd_step`: one recurrent step, for token-by-token streaming.

Numerics: every exponent is a (masked) sum of ``dt * A <= 0`` terms, so every ``exp`` is in
``(0, 1]``; the masked entries of the segment-sum matrix are ``-inf`` and become exact zeros.
Nothing is clamped.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["segsum", "ssd_chunked", "ssd_ref", "ssd_step"]


def _check_shapes(
    x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor | None, state: Tensor | None
) -> tuple[int, int, int, int, int, int]:
    """Validate SSD argument shapes; return ``(b, l, h, p, g, n)``."""
    if x.dim() != 4:
        raise ValueError(f"x must be (b, l, h, p); got shape {tuple(x.shape)}")
    b, seqlen, h, p = x.shape
    if dt.shape != (b, seqlen, h):
        raise ValueError(f"dt must be {(b, seqlen, h)}; got {tuple(dt.shape)}")
    if A.shape != (h,):
        raise ValueError(f"A must be ({h},); got {tuple(A.shape)}")
    if B.dim() != 4 or B.shape[:2] != (b, seqlen) or B.shape != C.shape:
        raise ValueError(
            f"B and C must both be (b={b}, l={seqlen}, g, n); "
            f"got {tuple(B.shape)} and {tuple(C.shape)}"
        )
    g, n = B.shape[2], B.shape[3]
    if h % g:
        raise ValueError(f"the number of heads ({h}) must be divisible by ngroups ({g})")
    if D is not None and D.shape != (h,):
        raise ValueError(f"D must be ({h},); got {tuple(D.shape)}")
    if state is not None and state.shape != (b, h, p, n):
        raise ValueError(f"state must be {(b, h, p, n)}; got {tuple(state.shape)}")
    return b, seqlen, h, p, g, n


def segsum(x: Tensor) -> Tensor:
    """Stable segment sums: ``out[..., i, j] = sum(x[..., j+1 : i+1])`` for ``j <= i``, else -inf.

    Built by masking then cumsum (never by subtracting two cumsums), so no large numbers
    cancel, and ``exp(segsum(x))`` is the lower-triangular decay matrix with exact zeros above
    the diagonal.

    Args:
        x: ``(..., T)``.

    Returns:
        ``(..., T, T)``.
    """
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)  # (..., T, T): x[..., i, j] = x_i
    strict = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=-1)
    x = x.masked_fill(~strict, 0)
    out = torch.cumsum(x, dim=-2)  # out[..., i, j] = sum_{j < k <= i} x_k
    lower = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=0)
    return out.masked_fill(~lower, float("-inf"))


def ssd_step(
    x_t: Tensor,
    dt_t: Tensor,
    A: Tensor,
    B_t: Tensor,
    C_t: Tensor,
    D: Tensor | None,
    state: Tensor,
) -> tuple[Tensor, Tensor]:
    """One recurrent SSD step.

    Args:
        x_t: ``(b, h, p)``.
        dt_t: ``(b, h)``, positive.
        A: ``(h,)``, negative.
        B_t: ``(b, g, n)``.
        C_t: ``(b, g, n)``.
        D: ``(h,)`` or None.
        state: ``(b, h, p, n)``.

    Returns:
        ``(y_t, new_state)``: ``(b, h, p)`` and ``(b, h, p, n)``. ``state`` is not modified.
    """
    h = x_t.size(1)
    r = h // B_t.size(1)
    B_h = B_t.repeat_interleave(r, dim=1)  # (b, g, n) -> (b, h, n)
    C_h = C_t.repeat_interleave(r, dim=1)  # (b, g, n) -> (b, h, n)
    dA = torch.exp(dt_t * A)  # (b, h)
    dBx = (x_t * dt_t[..., None])[..., None] * B_h[:, :, None, :]  # (b, h, p, n)
    new_state = state * dA[..., None, None] + dBx
    y_t = torch.einsum("bhpn,bhn->bhp", new_state, C_h)
    if D is not None:
        y_t = y_t + x_t * D[:, None]
    return y_t, new_state


def ssd_ref(
    x: Tensor,
    dt: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    D: Tensor | None = None,
    initial_state: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Naive SSD: the recurrence written out one step at a time (the oracle; O(l) Python steps).

    Args:
        x: ``(b, l, h, p)``.
        dt: ``(b, l, h)``, positive (after softplus).
        A: ``(h,)``, negative.
        B: ``(b, l, g, n)``.
        C: ``(b, l, g, n)``.
        D: ``(h,)`` or None.
        initial_state: ``(b, h, p, n)`` or None (zeros).

    Returns:
        ``(y, final_state)``: ``(b, l, h, p)`` and ``(b, h, p, n)``.
    """
    b, seqlen, h, p, g, n = _check_shapes(x, dt, A, B, C, D, initial_state)
    r = h // g
    state = x.new_zeros(b, h, p, n) if initial_state is None else initial_state.to(x.dtype)
    ys = []
    for t in range(seqlen):
        B_t = B[:, t].repeat_interleave(r, dim=1)  # (b, g, n) -> (b, h, n)
        C_t = C[:, t].repeat_interleave(r, dim=1)  # (b, g, n) -> (b, h, n)
        decay = torch.exp(dt[:, t] * A)[..., None, None]  # (b, h, 1, 1)
        inp = (dt[:, t, :, None] * x[:, t])[..., None] * B_t[:, :, None, :]  # (b, h, p, n)
        state = decay * state + inp
        y_t = (state * C_t[:, :, None, :]).sum(-1)  # (b, h, p)
        if D is not None:
            y_t = y_t + D[:, None] * x[:, t]
        ys.append(y_t)
    y = torch.stack(ys, dim=1) if ys else x.new_zeros(b, 0, h, p)  # (b, l, h, p)
    return y, state


def ssd_chunked(
    x: Tensor,
    dt: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    D: Tensor | None = None,
    chunk_size: int = 64,
    initial_state: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Chunked SSD: quadratic within chunks, a state-passing loop between them.

    Same arguments and results as :func:`ssd_ref`, plus ``chunk_size``. ``l`` need not be a
    multiple of ``chunk_size``: the tail is padded with ``dt = 0`` steps, which neither decay
    nor feed the state, so the final state is the state after the last real step.

    Cost: ``O(l * chunk_size)`` for the intra-chunk part and ``O(l * h * p * n)`` for the
    states, i.e. linear in ``l``; the Python loop runs ``ceil(l / chunk_size)`` times on
    ``(b, h, p, n)`` tensors.

    Args:
        x: ``(b, l, h, p)``.
        dt: ``(b, l, h)``, positive (after softplus).
        A: ``(h,)``, negative.
        B: ``(b, l, g, n)``.
        C: ``(b, l, g, n)``.
        D: ``(h,)`` or None.
        chunk_size: steps per chunk (64 is a good CPU default).
        initial_state: ``(b, h, p, n)`` or None (zeros).

    Returns:
        ``(y, final_state)``: ``(b, l, h, p)`` and ``(b, h, p, n)``.
    """
    b, seqlen, h, p, g, n = _check_shapes(x, dt, A, B, C, D, initial_state)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    r = h // g
    x_in = x
    if seqlen == 0:
        state = x.new_zeros(b, h, p, n) if initial_state is None else initial_state.to(x.dtype)
        return x.new_zeros(b, 0, h, p), state

    # 1. Pad to a multiple of the chunk size (dt = 0: the padded steps are no-ops).
    cs = min(chunk_size, max(seqlen, 1))
    pad = (-seqlen) % cs
    if pad:
        x = F.pad(x, (0, 0, 0, 0, 0, pad))  # (b, L, h, p)
        dt = F.pad(dt, (0, 0, 0, pad))  # (b, L, h)
        B = F.pad(B, (0, 0, 0, 0, 0, pad))  # (b, L, g, n)
        C = F.pad(C, (0, 0, 0, 0, 0, pad))  # (b, L, g, n)
    padded_len = seqlen + pad
    c = padded_len // cs

    # 2. Split into chunks; split heads into (groups, heads per group).
    x = x.reshape(b, c, cs, g, r, p)  # (b, L, h, p) -> (b, c, cs, g, r, p)
    B = B.reshape(b, c, cs, g, n)  # (b, L, g, n) -> (b, c, cs, g, n)
    C = C.reshape(b, c, cs, g, n)  # (b, L, g, n) -> (b, c, cs, g, n)
    dt = dt.reshape(b, c, cs, g, r)  # (b, L, h) -> (b, c, cs, g, r)
    xdt = x * dt[..., None]  # (b, c, cs, g, r, p)
    A_dt = (dt * A.reshape(g, r)).permute(0, 3, 4, 1, 2)  # (b, c, cs, g, r) -> (b, g, r, c, cs)
    A_cum = torch.cumsum(A_dt, dim=-1)  # (b, g, r, c, cs), non-increasing, <= 0

    # 3. Intra-chunk outputs (the diagonal blocks): y_l = sum_{s<=l} C_l.B_s decay(s->l) xdt_s.
    decay_ls = torch.exp(segsum(A_dt))  # (b, g, r, c, cs_l, cs_s), zeros above the diagonal
    # Batched matrix products rather than einsums: ONNX Runtime runs an einsum several times
    # slower than the same product as a MatMul (a third of the exported scan's time).
    C_g = C.permute(0, 3, 1, 2, 4)  # (b, g, c, cs_l, n)
    B_g = B.permute(0, 3, 1, 2, 4)  # (b, g, c, cs_s, n)
    CB = C_g @ B_g.transpose(-1, -2)  # (b, g, c, cs_l, cs_s)
    M = decay_ls * CB[:, :, None]  # (b, g, r, c, cs_l, cs_s)
    xdt_g = xdt.permute(0, 3, 4, 1, 2, 5)  # (b, g, r, c, cs_s, p)
    y = (M @ xdt_g).permute(0, 3, 4, 1, 2, 5)  # (b, g, r, c, cs_l, p) -> (b, c, cs, g, r, p)

    # 4. Each chunk's own contribution to the state at its end.
    decay_to_end = torch.exp(A_cum[..., -1:] - A_cum)  # (b, g, r, c, cs)
    xdt_end = xdt * decay_to_end.permute(0, 3, 4, 1, 2)[..., None]  # (b, c, cs, g, r, p)
    xdt_end_t = xdt_end.permute(0, 1, 3, 4, 5, 2)  # (b, c, g, r, p, cs)
    B_c = B.permute(0, 1, 3, 2, 4)[:, :, :, None]  # (b, c, g, 1, cs, n)
    chunk_states = xdt_end_t @ B_c  # (b, c, g, r, p, n)

    # 5. Pass the state across chunks (the only sequential part; c small steps).
    chunk_decay = torch.exp(A_cum[..., -1]).permute(0, 3, 1, 2)  # (b, g, r, c) -> (b, c, g, r)
    if initial_state is None:
        state = x.new_zeros(b, g, r, p, n)
    else:
        state = initial_state.to(x.dtype).reshape(b, g, r, p, n)  # (b, h, p, n) -> (b, g, r, p, n)
    starts = []
    for ci in range(c):
        starts.append(state)
        state = state * chunk_decay[:, ci, :, :, None, None] + chunk_states[:, ci]
    start_states = torch.stack(starts, dim=1)  # (b, c, g, r, p, n): state entering each chunk

    # 6. Inter-chunk outputs: the entering state, decayed to each step, read out by C.
    C_c = C.permute(0, 1, 3, 2, 4)[:, :, :, None]  # (b, c, g, 1, cs, n)
    y_off = (C_c @ start_states.transpose(-1, -2)).permute(0, 1, 4, 2, 3, 5)
    # (b, c, g, r, cs, p) -> (b, c, cs, g, r, p)
    y = y + y_off * torch.exp(A_cum).permute(0, 3, 4, 1, 2)[..., None]

    # 7. Merge chunks and heads, drop the padding, add the skip.
    y = y.reshape(b, padded_len, h, p)[:, :seqlen]  # (b, c, cs, g, r, p) -> (b, l, h, p)
    if D is not None:
        y = y + x_in * D[:, None]
    return y, state.reshape(b, h, p, n)  # (b, g, r, p, n) -> (b, h, p, n)
