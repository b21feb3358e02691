"""Configuration of the sentence-level scanner network."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["ScannerConfig"]


@dataclass
class ScannerConfig:
    """Hyper-parameters of :class:`longscan.models.scanner.ScannerModel`.

    Attributes:
        d_input: width of the sentence and query vectors (384 for MiniLM-L6).
        d_model: width of the residual stream.
        n_layers: Mamba-2 blocks per direction.
        d_state: SSM state size ``n`` per head.
        headdim: channels ``p`` per SSM head.
        expand: ``d_inner = expand * d_model``.
        d_conv: width of the short causal convolution.
        chunk_size: SSD chunk length (affects speed only, not results beyond float rounding).
        n_groups: groups sharing B and C (``ngroups``); must divide the number of heads.
        n_features: extra per-sentence features (e.g. lexical match); 0 for none.
        feature_names: which features, by name, when they are not the first ``n_features``
            of ``longscan.scanning.features.FEATURE_NAMES`` (empty: those first ones, as
            every configuration written before this field reads).
        bidirectional: add a second stack that reads the sentences back to front.
        read_twice: read ``[q; s1..sn]`` once without scoring, then again from the state the
            first reading left, scoring the second: every logit sees the whole document, with
            one stack and one direction ("just read twice", Arora et al. 2024). Needs the
            whole document up front, like ``bidirectional``; the two are exclusive.
        feature_skip: add a linear score of ``[cos(s, q), features]`` to every logit, so the
            network learns a correction to a lexical+dense prior instead of the whole ranking
            (helps when labelled data is scarce: the prior alone ranks like a tuned hybrid).
        dropout: dropout on the input embedding and on each block's residual branch.
        dt_min: lower end of the log-uniform initial step size.
        dt_max: upper end of the log-uniform initial step size.
        a_init_min: lower end of the uniform initial ``-A``.
        a_init_max: upper end of the uniform initial ``-A``.
        norm_eps: RMSNorm epsilon.
    """

    d_input: int = 384
    d_model: int = 256
    n_layers: int = 4
    d_state: int = 64
    headdim: int = 64
    expand: int = 2
    d_conv: int = 4
    chunk_size: int = 64
    n_groups: int = 1
    n_features: int = 0
    feature_names: tuple[str, ...] = ()
    bidirectional: bool = False
    read_twice: bool = False
    feature_skip: bool = False
    dropout: float = 0.0
    dt_min: float = 1e-3
    dt_max: float = 1e-1
    a_init_min: float = 1.0
    a_init_max: float = 16.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        positive = ("d_input", "d_model", "n_layers", "d_state", "headdim", "expand")
        positive += ("d_conv", "chunk_size", "n_groups")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if not isinstance(self.n_features, int) or self.n_features < 0:
            raise ValueError(f"n_features must be an integer >= 0; got {self.n_features!r}")
        if not isinstance(self.feature_names, (list, tuple)) or not all(
            isinstance(name, str) for name in self.feature_names
        ):
            raise ValueError(f"feature_names must be names; got {self.feature_names!r}")
        self.feature_names = tuple(self.feature_names)  # a JSON list reads back as a tuple
        if self.feature_names and len(self.feature_names) != self.n_features:
            raise ValueError(
                f"{len(self.feature_names)} feature_names for n_features={self.n_features}"
            )
        for name in ("bidirectional", "read_twice", "feature_skip"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool; got {getattr(self, name)!r}")
        if self.bidirectional and self.read_twice:
            raise ValueError("bidirectional and read_twice are exclusive: choose one")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {self.dropout!r}")
        if self.d_inner % self.headdim:
            raise ValueError(
                f"expand * d_model ({self.d_inner}) must be divisible by headdim ({self.headdim})"
            )
        if self.n_heads % self.n_groups:
            raise ValueError(
                f"the number of heads ({self.n_heads}) must be divisible by n_groups "
                f"({self.n_groups})"
            )
        if not 0.0 < self.dt_min <= self.dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max; got {self.dt_min}, {self.dt_max}")
        if not 0.0 < self.a_init_min <= self.a_init_max:
            raise ValueError(
                f"need 0 < a_init_min <= a_init_max; got {self.a_init_min}, {self.a_init_max}"
            )
        if not self.norm_eps > 0:
            raise ValueError(f"norm_eps must be > 0; got {self.norm_eps!r}")

    @property
    def d_inner(self) -> int:
        """Width of the mixer's inner stream, ``expand * d_model``."""
        return self.expand * self.d_model

    @property
    def n_heads(self) -> int:
        """Number of SSM heads, ``d_inner // headdim``."""
        return self.d_inner // self.headdim

    @property
    def conv_dim(self) -> int:
        """Channels through the short convolution: x, B and C."""
        return self.d_inner + 2 * self.n_groups * self.d_state

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScannerConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error, missing keys take defaults."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown ScannerConfig keys: {', '.join(unknown)}")
        return cls(**data)
