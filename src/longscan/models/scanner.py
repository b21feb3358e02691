"""The sentence-level scanner: a Mamba-2 network that reads ``[query; s_1; ...; s_n]``.

Each ``s_i`` is a frozen sentence vector (MiniLM, 384-d), so the network takes one SSM step
per sentence and gives one relevance logit per sentence. Cost is linear in the number of
sentences, and a causal model streams window by window in constant memory by carrying its
state (:meth:`ScannerModel.scan`).

File order follows transformers' ``models/mamba2``: helpers -> norm -> mixer -> block ->
model -> output dataclasses -> ``__all__``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from longscan.models.config import ScannerConfig
from longscan.ops.ssd import ssd_chunked, ssd_step

DEFAULT_WINDOW = 1024
"""Steps per block when a sequence runs through the network (bounds intermediate sizes)."""

MixerState = tuple[Tensor, Tensor]
"""``(conv_state (b, conv_dim, d_conv - 1), ssm_state (b, n_heads, headdim, d_state))``."""


# ----------------------------------------------------------------------------- helpers


def check_mask(mask: Tensor | None, b: int, seqlen: int) -> Tensor | None:
    """Validate a right-padding mask: ``(b, l)`` bool, True on real steps, padding only at the end.

    Padding must be at the end so that, in a causal pass, no real step ever sees a padded one.
    """
    if mask is None:
        return None
    if mask.shape != (b, seqlen):
        raise ValueError(f"mask must be {(b, seqlen)}; got {tuple(mask.shape)}")
    mask = mask.bool()
    if seqlen > 1 and bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise ValueError("mask must be right-padded: no real step may follow a padded one")
    return mask


def reverse_index(mask: Tensor | None, b: int, seqlen: int, device: torch.device) -> Tensor:
    """Per-item reversal of the real steps, padding left in place: ``(b, l)`` long indices.

    ``index[i, t] = len_i - 1 - t`` for ``t < len_i``, else ``t``. The map is its own inverse,
    and a right-padded sequence stays right-padded once reversed.
    """
    t = torch.arange(seqlen, device=device).expand(b, seqlen)  # (b, l)
    if mask is None:
        return t.flip(1)
    lengths = mask.sum(1, keepdim=True)  # (b, 1)
    return torch.where(t < lengths, lengths - 1 - t, t)


def gather_steps(x: Tensor, index: Tensor) -> Tensor:
    """``x[i, index[i, t]]`` for ``x`` ``(b, l, d)`` and ``index`` ``(b, m)``: ``(b, m, d)``."""
    return x.gather(1, index[..., None].expand(-1, -1, x.size(-1)))


def causal_conv(
    x: Tensor, weight: Tensor, bias: Tensor, conv_state: Tensor
) -> tuple[Tensor, Tensor]:
    """Depthwise causal convolution as ``k`` shifted multiply-adds (fast backward on CPU).

    Equal to ``nn.Conv1d(c, c, k, groups=c, padding=k - 1)`` cut to the first ``l`` outputs,
    with ``conv_state`` as the left context instead of zeros.

    Args:
        x: ``(b, l, c)``.
        weight: ``(c, k)``.
        bias: ``(c,)``.
        conv_state: ``(b, c, k - 1)``, the previous ``k - 1`` inputs, oldest first.

    Returns:
        ``(out, padded)``: ``(b, l, c)`` and the context-extended input ``(b, k - 1 + l, c)``.
    """
    seqlen, k = x.size(1), weight.size(1)
    padded = torch.cat([conv_state.transpose(1, 2), x], dim=1)  # (b, k - 1 + l, c)
    out = bias + padded[:, 0:seqlen] * weight[:, 0]
    for j in range(1, k):
        out = out + padded[:, j : j + seqlen] * weight[:, j]  # (b, l, c)
    return out, padded


def last_inputs(padded: Tensor, k: int, lengths: Tensor | None) -> Tensor:
    """The next conv state: the last ``k - 1`` real inputs of ``padded`` ``(b, k - 1 + l, c)``.

    With ``lengths`` ``(b,)``, item ``i`` keeps the ``k - 1`` inputs ending at its last real
    step, so trailing padding leaves its state untouched. Returns ``(b, c, k - 1)``.
    """
    if lengths is None:
        return padded[:, padded.size(1) - (k - 1) :].transpose(1, 2)  # (b, c, k - 1)
    idx = lengths[:, None] + torch.arange(k - 1, device=padded.device)  # (b, k - 1)
    return gather_steps(padded, idx).transpose(1, 2)  # (b, k - 1, c) -> (b, c, k - 1)


# ----------------------------------------------------------------------------- norm


class RMSNorm(nn.Module):
    """RMSNorm, optionally gated: ``norm(x * silu(gate)) * weight`` (Mamba-2's gated norm).

    ``groups > 1`` normalises each of ``groups`` equal slices of the last dimension on its
    own, as Mamba-2's ``RMSNormGated(group_size=d_inner // ngroups)`` does. Computed in
    float32 and cast back.
    """

    def __init__(self, d: int, eps: float = 1e-5, groups: int = 1) -> None:
        super().__init__()
        if d % groups:
            raise ValueError(f"RMSNorm width {d} is not divisible into {groups} groups")
        self.eps = eps
        self.groups = groups
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: Tensor, gate: Tensor | None = None) -> Tensor:
        """``x`` and ``gate``: ``(..., d)``; returns ``(..., d)``."""
        dtype = x.dtype
        x = x.float()
        if gate is not None:
            x = x * F.silu(gate.float())
        if self.groups > 1:  # (..., d) -> (..., groups, d // groups) and back
            x = x.unflatten(-1, (self.groups, -1))
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return (self.weight * x.flatten(-2)).to(dtype)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * x).to(dtype)


# ----------------------------------------------------------------------------- mixer


class Mamba2Mixer(nn.Module):
    """Mamba-2 mixer: in_proj -> short causal conv -> SiLU -> SSD -> D skip -> gated norm -> out.

    ``forward`` runs a whole (window of a) sequence with the chunked SSD, ``step`` runs one
    step with the recurrence; both carry the same :data:`MixerState`, so running windows
    back to back equals one pass.
    """

    def __init__(self, config: ScannerConfig, grouped_norm: bool = False) -> None:
        super().__init__()
        self.config = config
        self.d_inner = config.d_inner
        self.n_heads = config.n_heads
        self.headdim = config.headdim
        self.n_groups = config.n_groups
        self.d_state = config.d_state
        self.d_conv = config.d_conv
        self.conv_dim = config.conv_dim
        self.chunk_size = config.chunk_size

        d_in_proj = 2 * self.d_inner + 2 * self.n_groups * self.d_state + self.n_heads
        self.in_proj = nn.Linear(config.d_model, d_in_proj, bias=False)
        self.conv_weight = nn.Parameter(torch.empty(self.conv_dim, self.d_conv))
        self.conv_bias = nn.Parameter(torch.empty(self.conv_dim))
        self.dt_bias = nn.Parameter(torch.empty(self.n_heads))
        self.A_log = nn.Parameter(torch.empty(self.n_heads))
        self.D = nn.Parameter(torch.empty(self.n_heads))
        for p in (self.dt_bias, self.A_log, self.D):
            p._no_weight_decay = True  # read by optimiser-group builders, as in mamba_ssm
        # grouped_norm: one norm per B/C group, as in mamba_ssm (the sentence scanner's
        # checkpoints were trained with one norm over d_inner, so it stays their default)
        groups = config.n_groups if grouped_norm else 1
        self.norm = RMSNorm(self.d_inner, eps=config.norm_eps, groups=groups)
        self.out_proj = nn.Linear(self.d_inner, config.d_model, bias=False)
        self.reset_ssm_parameters()

    @torch.no_grad()
    def reset_ssm_parameters(self) -> None:
        """Mamba-2 init: ``dt`` log-uniform in ``[dt_min, dt_max]`` stored as inverse-softplus
        bias, ``-A`` uniform in ``[a_init_min, a_init_max]``, ``D = 1``, conv like Conv1d."""
        cfg = self.config
        log_lo, log_hi = math.log(cfg.dt_min), math.log(cfg.dt_max)
        dt = torch.exp(torch.rand(self.n_heads) * (log_hi - log_lo) + log_lo).clamp(min=1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) == dt
        A = torch.empty(self.n_heads).uniform_(cfg.a_init_min, cfg.a_init_max)
        self.A_log.copy_(torch.log(A))
        self.D.fill_(1.0)
        bound = 1.0 / math.sqrt(self.d_conv)  # Conv1d's default for fan_in = d_conv
        self.conv_weight.uniform_(-bound, bound)
        self.conv_bias.uniform_(-bound, bound)

    def allocate_state(
        self, batch: int, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> MixerState:
        """Zero state: ``((batch, conv_dim, d_conv - 1), (batch, n_heads, headdim, d_state))``."""
        device = device or self.in_proj.weight.device
        dtype = dtype or self.in_proj.weight.dtype
        conv = torch.zeros(batch, self.conv_dim, self.d_conv - 1, device=device, dtype=dtype)
        ssm = torch.zeros(
            batch, self.n_heads, self.headdim, self.d_state, device=device, dtype=dtype
        )
        return conv, ssm

    def _split_xbc(self, xBC: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(..., conv_dim)`` -> x ``(..., h, p)``, B and C ``(..., g, n)``."""
        gn = self.n_groups * self.d_state
        x, B, C = torch.split(xBC, [self.d_inner, gn, gn], dim=-1)
        x = x.unflatten(-1, (self.n_heads, self.headdim))  # (..., d_inner) -> (..., h, p)
        B = B.unflatten(-1, (self.n_groups, self.d_state))  # (..., g * n) -> (..., g, n)
        C = C.unflatten(-1, (self.n_groups, self.d_state))  # (..., g * n) -> (..., g, n)
        return x, B, C

    def forward(
        self, hidden: Tensor, state: MixerState | None = None, mask: Tensor | None = None
    ) -> tuple[Tensor, MixerState]:
        """Run a sequence (or the next window of one).

        Args:
            hidden: ``(b, l, d_model)``.
            state: the state left by the previous window, or None for a fresh start.
            mask: ``(b, l)`` bool right-padding mask (validated by the caller). Padded steps
                get ``dt = 0`` and are skipped by the conv state, so the returned state is the
                state after each item's last real step.

        Returns:
            ``(out, new_state)``: ``(b, l, d_model)`` and the carried :data:`MixerState`.
        """
        b, seqlen, _ = hidden.shape
        if state is None:
            state = self.allocate_state(b, hidden.device, hidden.dtype)
        conv_state, ssm_state = state

        # 1. Project: z (gate), xBC (conv input), dt (per-head step size).
        zxbcdt = self.in_proj(hidden)  # (b, l, 2 * d_inner + 2 * g * n + h)
        z, xBC, dt = torch.split(zxbcdt, [self.d_inner, self.conv_dim, self.n_heads], dim=-1)

        # 2. Short causal conv over xBC, continuing from the carried inputs; SiLU.
        xBC, padded = causal_conv(xBC, self.conv_weight, self.conv_bias, conv_state)
        xBC = F.silu(xBC)  # (b, l, conv_dim)
        x, B, C = self._split_xbc(xBC)  # (b, l, h, p), (b, l, g, n), (b, l, g, n)

        # 3. Discretise: dt > 0, A < 0; padded steps become no-ops.
        dt = F.softplus(dt + self.dt_bias)  # (b, l, h)
        if mask is not None:
            dt = dt * mask[..., None]
        A = -torch.exp(self.A_log.float())  # (h,)

        # 4. SSD scan with the D skip, continuing from the carried SSM state.
        y, ssm_state = ssd_chunked(x, dt, A, B, C, self.D, self.chunk_size, ssm_state)
        y = y.reshape(b, seqlen, self.d_inner)  # (b, l, h, p) -> (b, l, d_inner)

        # 5. Gated RMSNorm, output projection.
        out = self.out_proj(self.norm(y, gate=z))  # (b, l, d_model)

        # 6. Next conv state: the last d_conv - 1 real inputs.
        lengths = None if mask is None else mask.sum(1)
        conv_state = last_inputs(padded, self.d_conv, lengths)
        return out, (conv_state, ssm_state)

    def step(self, hidden: Tensor, state: MixerState) -> tuple[Tensor, MixerState]:
        """One recurrent step: ``hidden`` ``(b, d_model)`` -> ``(out (b, d_model), new_state)``."""
        conv_state, ssm_state = state

        # 1. Project.
        zxbcdt = self.in_proj(hidden)  # (b, 2 * d_inner + 2 * g * n + h)
        z, xBC, dt = torch.split(zxbcdt, [self.d_inner, self.conv_dim, self.n_heads], dim=-1)

        # 2. Conv over the window (previous d_conv - 1 inputs, this one); SiLU.
        window = torch.cat([conv_state, xBC[..., None]], dim=-1)  # (b, conv_dim, d_conv)
        xBC = F.silu((window * self.conv_weight).sum(-1) + self.conv_bias)  # (b, conv_dim)
        x, B, C = self._split_xbc(xBC)  # (b, h, p), (b, g, n), (b, g, n)

        # 3. Discretise and take one SSD step.
        dt = F.softplus(dt + self.dt_bias)  # (b, h)
        A = -torch.exp(self.A_log.float())  # (h,)
        y, ssm_state = ssd_step(x, dt, A, B, C, self.D, ssm_state)
        y = y.reshape(y.size(0), self.d_inner)  # (b, h, p) -> (b, d_inner)

        # 4. Gated RMSNorm, output projection.
        out = self.out_proj(self.norm(y, gate=z))  # (b, d_model)
        return out, (window[..., 1:], ssm_state)


# ----------------------------------------------------------------------------- block


class Block(nn.Module):
    """Pre-norm residual block: ``h + dropout(mixer(norm(h)))``."""

    def __init__(self, config: ScannerConfig, grouped_norm: bool = False) -> None:
        super().__init__()
        self.norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.mixer = Mamba2Mixer(config, grouped_norm=grouped_norm)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self, hidden: Tensor, state: MixerState | None = None, mask: Tensor | None = None
    ) -> tuple[Tensor, MixerState]:
        """``hidden`` ``(b, l, d_model)`` -> ``(hidden (b, l, d_model), new_state)``."""
        out, state = self.mixer(self.norm(hidden), state=state, mask=mask)
        return hidden + self.dropout(out), state

    def step(self, hidden: Tensor, state: MixerState) -> tuple[Tensor, MixerState]:
        """``hidden`` ``(b, d_model)`` -> ``(hidden (b, d_model), new_state)``."""
        out, state = self.mixer.step(self.norm(hidden), state)
        return hidden + self.dropout(out), state


# ----------------------------------------------------------------------------- model


class ScannerModel(nn.Module):
    """Scores every sentence of a document for relevance to a query, in one linear pass.

    1. Each sentence step gets query-interaction features ``[s, s*q, |s-q|, cos(s,q), f]``
       (so the query is present at every step, not only at the start), projected to
       ``d_model``.
    2. A projection of the query is prepended as step 0.
    3. ``n_layers`` Mamba-2 blocks run causally over ``[q; s_1..s_n]``.
    4. If ``bidirectional``, a second stack runs over ``[q; s_n..s_1]`` (each item's real
       sentences reversed, padding left at the end) and the two are merged:
       ``Linear(cat[h_fwd, h_rev])``. If ``read_twice``, the stack first reads
       ``[q; s_1..s_n]`` without scoring, then reads it again from the state it left.
    5. Final RMSNorm and a linear head give one logit per sentence; the query step has none.
    6. If ``feature_skip``, a linear score of ``[cos(s, q), features]`` is added to each
       logit (a wide path beside the deep one).

    Streaming: a causal model carries a :class:`ScannerState` across windows
    (``forward(..., state=)``), and the logits equal one full pass. A bidirectional model
    cannot be continued that way (the reverse direction needs the end first); use
    :meth:`scan`, which takes the whole (small: 50k x 384 floats) array of sentence vectors
    and streams both directions window by window, each with its own state.

    ``forward`` itself always runs in blocks of ``window`` steps (:data:`DEFAULT_WINDOW`)
    carrying the state, so no intermediate tensor grows with ``l`` (large fresh allocations
    make long sequences super-linearly slow on CPU); :meth:`scan` is ``forward`` under
    ``no_grad``.
    """

    def __init__(self, config: ScannerConfig) -> None:
        super().__init__()
        self.config = config
        d_interact = 3 * config.d_input + 1 + config.n_features
        self.embed_sentences = nn.Linear(d_interact, config.d_model)
        self.embed_query = nn.Linear(config.d_input, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        if config.bidirectional:
            self.layers_rev = nn.ModuleList(Block(config) for _ in range(config.n_layers))
            self.merge = nn.Linear(2 * config.d_model, config.d_model)
        self.norm_f = RMSNorm(config.d_model, eps=config.norm_eps)
        self.head = nn.Linear(config.d_model, 1)
        if config.feature_skip:
            self.prior = nn.Linear(1 + config.n_features, 1)
        self._init_weights()

    @torch.no_grad()
    def _init_weights(self) -> None:
        """Zero Linear biases; scale each out_proj by ``1/sqrt(n_layers)`` (GPT-2 / Mamba);
        the prior starts at zero, so an untrained wide path changes nothing."""
        for module in self.modules():
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.zero_()
            if isinstance(module, Mamba2Mixer):
                module.out_proj.weight /= math.sqrt(self.config.n_layers)
        if self.config.feature_skip:
            self.prior.weight.zero_()

    # -- inputs ---------------------------------------------------------------------------

    def _check_inputs(
        self, sentences: Tensor, query: Tensor, features: Tensor | None, mask: Tensor | None
    ) -> Tensor | None:
        cfg = self.config
        if sentences.dim() != 3 or sentences.size(-1) != cfg.d_input:
            raise ValueError(
                f"sentences must be (b, l, {cfg.d_input}); got {tuple(sentences.shape)}"
            )
        b, seqlen, _ = sentences.shape
        if query.shape != (b, cfg.d_input):
            raise ValueError(f"query must be {(b, cfg.d_input)}; got {tuple(query.shape)}")
        if cfg.n_features and (features is None or features.shape != (b, seqlen, cfg.n_features)):
            got = None if features is None else tuple(features.shape)
            raise ValueError(f"features must be {(b, seqlen, cfg.n_features)}; got {got}")
        if not cfg.n_features and features is not None:
            raise ValueError("features given but the config has n_features=0")
        return check_mask(mask, b, seqlen)

    def embed(self, sentences: Tensor, query: Tensor, features: Tensor | None = None) -> Tensor:
        """Query-interaction embedding of each sentence step.

        Args:
            sentences: ``(b, l, d_input)``.
            query: ``(b, d_input)``.
            features: ``(b, l, n_features)`` or None.

        Returns:
            ``(b, l, d_model)``.
        """
        q = query[:, None, :]  # (b, d_input) -> (b, 1, d_input)
        parts = [
            sentences,
            sentences * q,
            (sentences - q).abs(),
            *self._match(sentences, query, features),
        ]
        return self.dropout(self.embed_sentences(torch.cat(parts, dim=-1)))  # (b, l, d_model)

    @staticmethod
    def _match(sentences: Tensor, query: Tensor, features: Tensor | None) -> list[Tensor]:
        """``[cos(s, q) (b, l, 1), features (b, l, n_features)]``: the inputs of the prior."""
        cos = F.cosine_similarity(sentences, query[:, None, :], dim=-1, eps=1e-8)[..., None]
        return [cos] if features is None else [cos, features.to(sentences.dtype)]

    def prior_logits(self, sentences: Tensor, query: Tensor, features: Tensor | None) -> Tensor:
        """The wide path's score ``(b, l)``; needs ``feature_skip``."""
        match = torch.cat(self._match(sentences, query, features), dim=-1)  # (b, l, 1 + f)
        return self.prior(match).squeeze(-1)  # (b, l)

    # -- stacks ---------------------------------------------------------------------------

    def _run_stack(
        self,
        layers: nn.ModuleList,
        hidden: Tensor,
        query_step: Tensor | None,
        states: list[MixerState | None],
        mask: Tensor | None,
    ) -> Tensor:
        """Run blocks over ``[query_step; hidden]`` (no query step when None).

        ``hidden`` ``(b, w, d_model)``, ``query_step`` ``(b, d_model)``. ``states`` (one per
        block, None for zeros) is replaced in place by the carried states. Returns the sentence
        positions only, ``(b, w, d_model)``.
        """
        offset = 0
        if query_step is not None:
            hidden = torch.cat([query_step[:, None], hidden], dim=1)  # (b, 1 + w, d_model)
            if mask is not None:
                mask = F.pad(mask, (1, 0), value=True)  # (b, 1 + w)
            offset = 1
        for i, block in enumerate(layers):
            hidden, states[i] = block(hidden, state=states[i], mask=mask)
        return hidden[:, offset:]

    def _windows(
        self,
        layers: nn.ModuleList,
        sentences: Tensor,
        query: Tensor,
        features: Tensor | None,
        mask: Tensor | None,
        window: int,
        states: list[MixerState | None],
        query_first: bool,
        order: Tensor | None = None,
    ) -> Iterator[tuple[int, int, Tensor]]:
        """Run a stack window by window; yield ``(start, stop, hidden (b, stop - start, d))``.

        Every intermediate tensor is at most ``window`` steps long, which keeps allocations
        small (large fresh allocations make long sequences super-linearly slow on CPU).
        ``states`` is updated in place. ``order`` ``(b, l)`` optionally permutes the steps (the
        reverse stack); :func:`reverse_index` leaves the mask unchanged, so it is sliced as is.
        """
        seqlen = sentences.size(1)
        q_step = self.dropout(self.embed_query(query)) if query_first else None  # (b, d_model)
        for start in range(0, seqlen, window):
            stop = min(start + window, seqlen)
            if order is None:
                s_w = sentences[:, start:stop]  # (b, w, d_input)
                f_w = None if features is None else features[:, start:stop]
            else:
                s_w = gather_steps(sentences, order[:, start:stop])  # (b, w, d_input)
                f_w = None if features is None else gather_steps(features, order[:, start:stop])
            m_w = None if mask is None else mask[:, start:stop]  # (b, w)
            emb = self.embed(s_w, query, f_w)  # (b, w, d_model)
            yield start, stop, self._run_stack(layers, emb, q_step, states, m_w)
            q_step = None

    def _logits(self, hidden: Tensor) -> Tensor:
        """``(b, w, d_model)`` -> logits ``(b, w)``."""
        return self.head(self.norm_f(hidden)).squeeze(-1)  # (b, w, 1) -> (b, w)

    # -- public ---------------------------------------------------------------------------

    def allocate_state(
        self, batch: int, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> ScannerState:
        """A fresh streaming state for a causal model (the next window starts with the query)."""
        if self.config.bidirectional or self.config.read_twice:
            raise ValueError(
                "a bidirectional or read-twice scanner cannot be continued window by window "
                "through forward(state=...); use scan(), which streams the whole document"
            )
        layers = [blk.mixer.allocate_state(batch, device, dtype) for blk in self.layers]
        return ScannerState(layers=layers, n_steps=0)

    def forward(
        self,
        sentences: Tensor,
        query: Tensor,
        features: Tensor | None = None,
        mask: Tensor | None = None,
        state: ScannerState | None = None,
        *,
        window: int = DEFAULT_WINDOW,
    ) -> ScannerOutput:
        """Score sentences (a whole document, or the next window of one).

        Args:
            sentences: ``(b, l, d_input)`` sentence vectors.
            query: ``(b, d_input)`` query vector; needed for every window (it feeds the
                interaction features of every step).
            features: ``(b, l, n_features)`` extra per-sentence features, or None.
            mask: ``(b, l)`` bool, True on real sentences, right-padded. Padded steps get
                logit ``-inf`` (losses must select real steps, e.g. ``logits[mask]``) and do
                not change real steps or the carried state.
            state: causal models only: the state returned by the previous window, or a fresh
                one from :meth:`allocate_state`. A fresh state (``n_steps == 0``) means this
                window begins the document, so the query step is prepended.
            window: execution detail: the sequence runs through the network in blocks of this
                many steps, carrying the state, so no intermediate grows with ``l``. The
                result does not depend on it beyond float rounding.

        Returns:
            :class:`ScannerOutput` with ``logits`` ``(b, l)`` and, for a causal model, the
            ``state`` to continue from (None for a bidirectional or read-twice model).
        """
        if window < 1:
            raise ValueError(f"window must be >= 1; got {window}")
        mask = self._check_inputs(sentences, query, features, mask)
        whole = self.config.bidirectional or self.config.read_twice
        if state is not None and whole:
            raise ValueError(
                "state= is for single-pass causal models; a bidirectional or read-twice model "
                "uses scan()"
            )
        b, seqlen, _ = sentences.shape
        n_layers = self.config.n_layers
        args = (sentences, query, features, mask, window)

        bidirectional = self.config.bidirectional
        if seqlen == 0:
            logits = sentences.new_zeros(b, 0)
            new_state = None if whole else (state or self.allocate_state(b))
            return ScannerOutput(logits=logits, state=new_state)

        # 1-3. Interaction embedding, query step (only at the start of a document), causal
        # stack, block by block. A causal model scores each block at once (5.); a
        # bidirectional one keeps the top hidden vectors, (b, l, d_model), for the merge; a
        # read-twice one scores only its second reading.
        fresh = state is None or state.n_steps == 0
        states = [None] * n_layers if state is None else list(state.layers)
        if self.config.read_twice:  # the first reading only leaves its state
            for _ in self._windows(self.layers, *args, states, True):
                pass
        parts = [
            h if bidirectional else self._logits(h)
            for _, _, h in self._windows(self.layers, *args, states, fresh)
        ]
        n_steps = (0 if state is None else state.n_steps) + seqlen + int(fresh)
        new_state = None if whole else ScannerState(layers=states, n_steps=n_steps)

        if not bidirectional:
            logits = torch.cat(parts, dim=1)  # (b, l)
        else:
            # 4. Reverse stack over [q; s_len..s_1; padding] with its own state; each window is
            # merged with the forward states of the same sentences, then 5. norm and head.
            hidden = torch.cat(parts, dim=1)  # (b, l, d_model)
            rev = reverse_index(mask, b, seqlen, sentences.device)  # (b, l), an involution
            rev_states: list[MixerState | None] = [None] * n_layers
            parts = []
            for start, stop, h_rev in self._windows(
                self.layers_rev, *args, rev_states, True, order=rev
            ):
                h_fwd = gather_steps(hidden, rev[:, start:stop])  # (b, w, d_model)
                merged = self.merge(torch.cat([h_fwd, h_rev], dim=-1))  # (b, w, d_model)
                parts.append(self._logits(merged))  # (b, w) in reversed order
            logits = torch.cat(parts, dim=1).gather(1, rev)  # (b, l) in document order

        # 6. The wide path.
        if self.config.feature_skip:
            logits = logits + self.prior_logits(sentences, query, features)
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        return ScannerOutput(logits=logits, state=new_state)

    @torch.no_grad()
    def scan(
        self,
        sentences: Tensor,
        query: Tensor,
        features: Tensor | None = None,
        mask: Tensor | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> Tensor:
        """Inference over a document of any length with activations bounded by ``window``.

        Causal: windows run front to back carrying the state. Bidirectional: the forward
        stack streams front to back and keeps only its top hidden vectors (``l x d_model``,
        smaller than the input); the reverse stack then streams over ``[q; s_n..s_1]`` with
        its own state, and each of its windows is merged with the stored forward vectors and
        scored. Read twice: the windows run front to back twice, carrying the state, and
        only the second run is scored. Each way the logits equal a full pass (up to float
        rounding). Call ``model.eval()`` first; dropout would break that equality.

        Args:
            sentences: ``(b, l, d_input)``.
            query: ``(b, d_input)``.
            features: ``(b, l, n_features)`` or None.
            mask: ``(b, l)`` right-padding mask or None.
            window: sentence steps per window.

        Returns:
            logits ``(b, l)``, ``-inf`` on padded steps.
        """
        return self.forward(sentences, query, features, mask, window=window).logits


class ScannerEnsemble(nn.Module):
    """Scan networks of one config trained apart (other seeds); the logit is their mean.

    Training noise alone moves a single checkpoint by several questions in 40 at small word
    budgets (docs/experiments.md); the mean of a few members is steadier. Each member reads the
    same vectors and features, so an ensemble costs one more scan per member, never another
    encoding.
    """

    def __init__(self, config: ScannerConfig, members: int) -> None:
        super().__init__()
        if members < 2:
            raise ValueError(f"an ensemble needs two or more members, got {members}")
        self.config = config
        self.members = nn.ModuleList(ScannerModel(config) for _ in range(members))

    def scan(
        self,
        sentences: Tensor,
        query: Tensor,
        features: Tensor | None = None,
        mask: Tensor | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> Tensor:
        """The members' mean :meth:`ScannerModel.scan` logits ``(b, l)``."""
        logits = [member.scan(sentences, query, features, mask, window) for member in self.members]
        return torch.stack(logits).mean(dim=0)


# ----------------------------------------------------------------------------- outputs


@dataclass
class ScannerState:
    """What a causal scanner carries between windows.

    Attributes:
        layers: one :data:`MixerState` per block.
        n_steps: steps consumed so far, the query step included (0: nothing read yet).
    """

    layers: list[MixerState]
    n_steps: int = 0

    def detach(self) -> ScannerState:
        """The same state cut from the autograd graph (truncated backprop through windows)."""
        layers = [(conv.detach(), ssm.detach()) for conv, ssm in self.layers]
        return ScannerState(layers=layers, n_steps=self.n_steps)


@dataclass
class ScannerOutput:
    """Result of :meth:`ScannerModel.forward`.

    Attributes:
        logits: ``(b, l)`` one relevance logit per sentence, ``-inf`` on padded steps.
        state: the state to continue from (causal models), else None.
    """

    logits: Tensor
    state: ScannerState | None = None


__all__ = [
    "DEFAULT_WINDOW",
    "Block",
    "Mamba2Mixer",
    "MixerState",
    "RMSNorm",
    "ScannerEnsemble",
    "ScannerModel",
    "ScannerOutput",
    "ScannerState",
    "causal_conv",
]
