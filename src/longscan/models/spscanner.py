"""The paper's token-level scanner (SPScanner): a Mamba-2 language model's backbone with a
binary head on every hidden state; a sentence's logit is the one at its last token.

It reuses the sentence-level scanner's Mamba-2 blocks (``models/scanner.py``) and their
pure-PyTorch SSD (``ops/ssd.py``), so it runs on CPU as well as CUDA, without ``mamba_ssm``.
The parameters map one to one onto ``mamba_ssm``'s ``MambaLMHeadModel`` plus the paper's
``binary_head``; :data:`MAMBA_SSM_NAMES` spells the mapping out, and
:func:`load_mamba_ssm_state_dict` refuses anything it cannot place.

File order: configuration -> names -> model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import Tensor, nn

from longscan.models.config import ScannerConfig
from longscan.models.scanner import Block, MixerState, RMSNorm

DEFAULT_BLOCK_TOKENS = 4096
"""Tokens per block when a sequence runs through the network, carrying the state: the
intermediate tensors stay this size whatever the document's length."""

# ----------------------------------------------------------------------------- configuration

MAMBA2_130M: dict[str, Any] = {
    "d_model": 768,
    "d_intermediate": 0,
    "n_layer": 24,
    "vocab_size": 50277,
    "ssm_cfg": {"layer": "Mamba2"},
    "attn_layer_idx": [],
    "attn_cfg": {},
    "rms_norm": True,
    "residual_in_fp32": True,
    "fused_add_norm": True,
    "pad_vocab_size_multiple": 16,
    "tie_embeddings": True,
}
"""``mamba_ssm``'s config.json of ``state-spaces/mamba2-130m``, the model SPScanner-130m is
fine-tuned from: the layout the speed benchmark and the tests build with random weights."""


@dataclass(frozen=True)
class SPScannerConfig:
    """Shape of a token-level scanner (``mamba_ssm``'s ``MambaConfig`` with a Mamba-2 mixer).

    Attributes:
        vocab_size: rows of the embedding, already padded (``mamba_ssm`` pads the tokenizer's
            vocabulary to a multiple of ``pad_vocab_size_multiple``).
        d_model: width of the residual stream (768 for the 130m model, 2048 for 1.3b).
        n_layer: Mamba-2 blocks.
        d_state, d_conv, expand, headdim, ngroups, chunk_size: the Mamba-2 mixer's settings
            (``chunk_size`` changes speed, not results beyond float rounding).
        norm_eps: RMSNorm epsilon (``mamba_ssm`` uses 1e-5 throughout).
    """

    vocab_size: int
    d_model: int
    n_layer: int
    d_state: int = 128
    d_conv: int = 4
    expand: int = 2
    headdim: int = 64
    ngroups: int = 1
    chunk_size: int = 256
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "norm_eps":
                if not (isinstance(value, float) and value > 0):
                    raise ValueError(f"norm_eps must be a positive float; got {value!r}")
            elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{f.name} must be a positive integer; got {value!r}")
        self.mixer_config()  # the mixer's own checks (heads divisible by groups, ...)

    def mixer_config(self) -> ScannerConfig:
        """The settings of the shared Mamba-2 blocks."""
        return ScannerConfig(
            d_model=self.d_model,
            n_layers=self.n_layer,
            d_state=self.d_state,
            headdim=self.headdim,
            expand=self.expand,
            d_conv=self.d_conv,
            chunk_size=self.chunk_size,
            n_groups=self.ngroups,
            norm_eps=self.norm_eps,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SPScannerConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown SPScanner settings: {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_mamba_ssm(cls, raw: Mapping[str, Any]) -> SPScannerConfig:
        """Read ``mamba_ssm``'s ``MambaConfig`` (as saved in a checkpoint's config.json).

        Raises:
            ValueError: a layout this model does not implement (Mamba-1 layers, attention
                layers, MLPs, LayerNorm, biases, per-channel D, a norm before the gate), each
                named.
        """
        ssm = dict(raw.get("ssm_cfg") or {})
        refusals = []
        if ssm.pop("layer", "Mamba1") != "Mamba2":
            refusals.append("ssm_cfg.layer is not Mamba2")
        if raw.get("attn_layer_idx"):
            refusals.append("attention layers (attn_layer_idx)")
        if raw.get("d_intermediate", 0):
            refusals.append("MLP blocks (d_intermediate > 0)")
        if not raw.get("rms_norm", True):
            refusals.append("LayerNorm instead of RMSNorm (rms_norm: false)")
        unsupported = {
            "rmsnorm": True,
            "norm_before_gate": False,
            "D_has_hdim": False,
            "bias": False,
            "conv_bias": True,
            "d_ssm": None,
        }
        for key, expected in unsupported.items():
            if key in ssm and ssm.pop(key) != expected:
                refusals.append(f"ssm_cfg.{key} != {expected}")
        for initialisation_only in ("dt_min", "dt_max", "dt_init_floor", "A_init_range"):
            ssm.pop(initialisation_only, None)  # loaded weights replace what these set
        if tuple(ssm.pop("dt_limit", (0.0, float("inf")))) != (0.0, float("inf")):
            refusals.append("ssm_cfg.dt_limit (a clamped step size)")
        known = {"d_state", "d_conv", "expand", "headdim", "ngroups", "chunk_size"}
        refusals += [f"ssm_cfg.{key}" for key in sorted(set(ssm) - known)]
        if refusals:
            raise ValueError("unsupported mamba_ssm layout: " + "; ".join(refusals))
        try:
            vocab, multiple = int(raw["vocab_size"]), int(raw.get("pad_vocab_size_multiple", 1))
            d_model, n_layer = int(raw["d_model"]), int(raw["n_layer"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"not a mamba_ssm MambaConfig ({error!r} missing or invalid)"
            ) from None
        padded = vocab + (-vocab) % max(multiple, 1)
        return cls(vocab_size=padded, d_model=d_model, n_layer=n_layer, **ssm)


# ----------------------------------------------------------------------------- names

MAMBA_SSM_NAMES: dict[str, str] = {
    "embedding.weight": "backbone.embedding.weight",
    "norm_f.weight": "backbone.norm_f.weight",
    "binary_head.weight": "binary_head.weight",
    "binary_head.bias": "binary_head.bias",
}
"""Our parameter name -> ``mamba_ssm``'s, outside the layers."""

MAMBA_SSM_LAYER_NAMES: dict[str, str] = {
    "norm.weight": "norm.weight",
    "mixer.in_proj.weight": "mixer.in_proj.weight",
    "mixer.conv_weight": "mixer.conv1d.weight",  # ours (c, k), theirs nn.Conv1d's (c, 1, k)
    "mixer.conv_bias": "mixer.conv1d.bias",
    "mixer.dt_bias": "mixer.dt_bias",
    "mixer.A_log": "mixer.A_log",
    "mixer.D": "mixer.D",
    "mixer.norm.weight": "mixer.norm.weight",
    "mixer.out_proj.weight": "mixer.out_proj.weight",
}
"""Our name under ``layers.{i}.`` -> ``mamba_ssm``'s under ``backbone.layers.{i}.``."""

MAMBA_SSM_UNUSED = ("lm_head.weight",)
"""``mamba_ssm`` names the scanner does not read (the LM head: tied to the embedding)."""


def mamba_ssm_name(name: str) -> str:
    """``mamba_ssm``'s name for one of our parameters.

    Raises:
        KeyError: a name outside the mapping (a new parameter must be mapped by hand).
    """
    if name in MAMBA_SSM_NAMES:
        return MAMBA_SSM_NAMES[name]
    prefix, _, index_rest = name.partition(".")
    index, _, rest = index_rest.partition(".")
    if prefix == "layers" and index.isdigit() and rest in MAMBA_SSM_LAYER_NAMES:
        return f"backbone.layers.{index}.{MAMBA_SSM_LAYER_NAMES[rest]}"
    raise KeyError(f"no mamba_ssm name for parameter {name!r}")


def _is_conv_weight(name: str) -> bool:
    return name.endswith("mixer.conv_weight")


# ----------------------------------------------------------------------------- model


class SPScannerModel(nn.Module):
    """Reads ``question tokens + document tokens`` causally and gives every token a logit.

    ``embedding -> n_layer pre-norm Mamba-2 blocks -> RMSNorm -> binary_head``, as in the
    paper's ``MambaLMHeadModel`` with ``binary_head = Linear(d_model, 1)``. Every forward runs
    in blocks of ``block_tokens`` carrying the recurrent state, so memory stays constant in the
    length, and a run split into windows by the caller (passing ``state`` on) equals one pass.
    """

    def __init__(self, config: SPScannerConfig) -> None:
        super().__init__()
        self.config = config
        mixer = config.mixer_config()
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(Block(mixer, grouped_norm=True) for _ in range(config.n_layer))
        self.norm_f = RMSNorm(config.d_model, eps=config.norm_eps)
        self.binary_head = nn.Linear(config.d_model, 1)

    def use_chunk_size(self, chunk_size: int) -> None:
        """Run the SSD in chunks of ``chunk_size`` steps: a speed setting (64 is faster on a
        CPU than the published 256), equal up to float rounding."""
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive; got {chunk_size}")
        for layer in self.layers:
            layer.mixer.chunk_size = chunk_size

    def allocate_state(
        self, batch: int, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> list[MixerState]:
        """A fresh state, one per layer."""
        return [layer.mixer.allocate_state(batch, device, dtype) for layer in self.layers]

    def _check(self, input_ids: Tensor) -> None:
        if input_ids.dim() != 2 or input_ids.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"input_ids must be (b, l) integers; got {tuple(input_ids.shape)}")
        if input_ids.numel() and not 0 <= int(input_ids.min()) <= int(input_ids.max()) < (
            self.config.vocab_size
        ):
            raise ValueError(
                f"token ids must lie in [0, {self.config.vocab_size}); the tokenizer does not "
                "belong to this checkpoint"
            )

    def _blocks(
        self, input_ids: Tensor, state: list[MixerState] | None, block_tokens: int
    ) -> tuple[list[Tensor], list[MixerState]]:
        """Final hidden states ``(b, w, d_model)`` block by block, and the state after them."""
        self._check(input_ids)
        if state is None:
            state = self.allocate_state(input_ids.size(0), input_ids.device)
        hiddens = []
        for start in range(0, input_ids.size(1), block_tokens):
            hidden = self.embedding(input_ids[:, start : start + block_tokens])  # (b, w, d)
            new_state = []
            for layer, layer_state in zip(self.layers, state, strict=True):
                hidden, layer_state = layer(hidden, state=layer_state)
                new_state.append(layer_state)
            state = new_state
            hiddens.append(self.norm_f(hidden))
        return hiddens, state

    def hidden_states(
        self,
        input_ids: Tensor,
        state: list[MixerState] | None = None,
        block_tokens: int = DEFAULT_BLOCK_TOKENS,
    ) -> tuple[Tensor, list[MixerState]]:
        """``(b, l, d_model)`` final (normed) hidden states and the state after the last token.

        Holds ``l x d_model`` floats: for long inputs use :meth:`forward`, which keeps only
        the logits.
        """
        hiddens, state = self._blocks(input_ids, state, block_tokens)
        empty = input_ids.new_zeros((input_ids.size(0), 0, self.config.d_model), dtype=torch.float)
        return (torch.cat(hiddens, dim=1) if hiddens else empty), state

    def forward(
        self,
        input_ids: Tensor,
        state: list[MixerState] | None = None,
        block_tokens: int = DEFAULT_BLOCK_TOKENS,
    ) -> tuple[Tensor, list[MixerState]]:
        """``(b, l)`` binary logits of every token, and the state after the last token."""
        hiddens, state = self._blocks(input_ids, state, block_tokens)
        logits = [self.binary_head(hidden).squeeze(-1) for hidden in hiddens]  # (b, w) each
        empty = input_ids.new_zeros((input_ids.size(0), 0), dtype=torch.float)
        return (torch.cat(logits, dim=1) if logits else empty), state

    def mamba_ssm_state_dict(self) -> dict[str, Tensor]:
        """The weights under ``mamba_ssm``'s names and shapes (with the LM head tied to the
        embedding, as ``MambaLMHeadModel`` saves it)."""
        out = {}
        for name, tensor in self.state_dict().items():
            out[mamba_ssm_name(name)] = tensor[:, None, :] if _is_conv_weight(name) else tensor
        out["lm_head.weight"] = out["backbone.embedding.weight"]
        return out

    def load_mamba_ssm_state_dict(self, state: Mapping[str, Tensor]) -> None:
        """Load weights saved under ``mamba_ssm``'s names, every one placed explicitly.

        Raises:
            ValueError: the names missing, unexpected or of the wrong shape, all listed.
        """
        own = self.state_dict()
        theirs = {mamba_ssm_name(name): name for name in own}
        missing = sorted(name for name in theirs if name not in state)
        unexpected = sorted(n for n in state if n not in theirs and n not in MAMBA_SSM_UNUSED)
        converted, wrong = {}, []
        for their_name, our_name in theirs.items():
            if their_name not in state:
                continue
            tensor = state[their_name]
            if not isinstance(tensor, Tensor):
                wrong.append(f"{their_name}: not a tensor ({type(tensor).__name__})")
                continue
            if _is_conv_weight(our_name) and tensor.dim() == 3 and tensor.size(1) == 1:
                tensor = tensor[:, 0, :]  # (c, 1, k) -> (c, k)
            if tuple(tensor.shape) != tuple(own[our_name].shape):
                wrong.append(
                    f"{their_name}: shape {tuple(state[their_name].shape)}, expected "
                    f"{tuple(own[our_name].shape)}"
                )
                continue
            converted[our_name] = tensor.to(own[our_name].dtype)
        problems = [f"missing: {', '.join(missing)}"] if missing else []
        problems += [f"unexpected: {', '.join(unexpected)}"] if unexpected else []
        problems += [f"wrong shape: {'; '.join(wrong)}"] if wrong else []
        if problems:
            raise ValueError("the weights do not fit this layout. " + " | ".join(problems))
        self.load_state_dict(converted, strict=True)


__all__ = [
    "DEFAULT_BLOCK_TOKENS",
    "MAMBA2_130M",
    "MAMBA_SSM_LAYER_NAMES",
    "MAMBA_SSM_NAMES",
    "MAMBA_SSM_UNUSED",
    "SPScannerConfig",
    "SPScannerModel",
    "mamba_ssm_name",
]
