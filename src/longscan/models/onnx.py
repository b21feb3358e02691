"""The causal scan network through ONNX Runtime, so a question needs no PyTorch at all.

Importing torch takes longer than answering a second question about a document already
read, so the command line and the service scan with ONNX Runtime on a CPU. Each network is
exported once per checkpoint (keyed by its weights' SHA-256) into the cache as two graphs:

- ``embed``: sentence vectors, query vector and features -> the steps ``(l, d_model)``, the
  query step ``(d_model,)`` and the wide path's prior ``(l,)``; any ``l``.
- ``stack``: a fixed window of steps with its padding mask and the carried states of every
  layer -> the window's logits and the next states. Fixed shapes keep the trace exact; two
  widths (``WIDE`` and ``NARROW``) bound the padding of a document's last window.

The runner feeds ``[q; s_1..s_n]`` through the windows back to back, as the PyTorch model
streams it, and the logits agree to float rounding (tested). Bidirectional and read-twice
networks need the whole sequence first; they stay on PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from longscan.models.config import ScannerConfig

WIDE, NARROW = 512, 64  # steps per exported window (multiples of the SSD chunk)
GRAPH_VERSION = 2  # in the exports' names: graphs of an older export are made again
SCAN_THREADS = 1  # a window's small matrices: 9.7 ms per 512 steps on one thread, 13.9 on two


def exportable(config: ScannerConfig) -> bool:
    """Whether a network of ``config`` streams in one causal pass (what the graphs do)."""
    return not (config.bidirectional or config.read_twice)


class OnnxScanNetwork:
    """A trained causal scan network (or the mean of an ensemble's members) in ONNX Runtime.

    Args:
        config: The networks' configuration.
        members: Per member, the paths of its ``embed`` graph and its ``stack`` graphs by width.
        threads: Intra-op threads: one by default, since splitting a window's small matrix
            products between threads costs more than it saves (measured here).
    """

    def __init__(
        self,
        config: ScannerConfig,
        members: Sequence[tuple[Path, dict[int, Path]]],
        threads: int = SCAN_THREADS,
    ) -> None:
        from longscan.encoders.bert import onnx_session

        self.config = config
        self.members = [
            (
                onnx_session(embed, threads),
                {width: onnx_session(path, threads) for width, path in stacks.items()},
            )
            for embed, stacks in members
        ]

    def scan(self, sentences: np.ndarray, query: np.ndarray, features: np.ndarray) -> np.ndarray:
        """Logits ``(l,)`` float64 of sentences ``(l, d_input)``, query ``(d_input,)`` and
        features ``(l, n_features)`` (float32): the mean over members."""
        indices = range(len(self.members))
        logits = [self._member(index, sentences, query, features) for index in indices]
        return np.mean(logits, axis=0)

    def _member(
        self, index: int, sentences: np.ndarray, query: np.ndarray, features: np.ndarray
    ) -> np.ndarray:
        embed, stacks = self.members[index]
        length = len(sentences)
        logits = np.empty(length + 1, dtype=np.float32)  # [q; s_1..s_l]
        prior = np.zeros(length)
        states = _zero_states(self.config)
        pending = np.zeros((0, self.config.d_model), dtype=np.float32)  # embedded, not read
        done = read = 0  # sentences embedded; steps read, the query step included
        while read < length + 1:
            if len(pending) < WIDE and done < length:  # embed by windows: memory stays flat
                feeds = {"sentences": sentences[None, done : done + WIDE], "query": query[None]}
                if self.config.n_features:
                    feeds["features"] = features[None, done : done + WIDE].astype(np.float32)
                steps, query_step, window_prior = embed.run(None, feeds)
                prior[done : done + WIDE] = window_prior[0]
                head = [query_step] if done == 0 else []
                pending = np.concatenate([pending, *head, steps[0]])
                done += steps.shape[1]
                continue
            width = WIDE if len(pending) >= WIDE else NARROW
            window, pending = pending[:width], pending[width:]
            real = len(window)
            padded = np.zeros((1, width, window.shape[1]), dtype=np.float32)
            padded[0, :real] = window
            mask = np.arange(width)[None] < real
            carried = dict(zip(state_names(self.config), states, strict=True))
            outputs = stacks[width].run(None, {"steps": padded, "mask": mask, **carried})
            logits[read : read + real] = outputs[0][0, :real]
            states = outputs[1:]
            read += real
        scores = logits[1:].astype(np.float64)  # the query step has no score
        return scores + prior if self.config.feature_skip else scores


def state_names(config: ScannerConfig) -> list[str]:
    """Input names of the carried states, two per layer (conv, ssm)."""
    return [f"{kind}{layer}" for layer in range(config.n_layers) for kind in ("conv", "ssm")]


def _zero_states(config: ScannerConfig) -> list[np.ndarray]:
    conv = np.zeros((1, config.conv_dim, config.d_conv - 1), dtype=np.float32)
    ssm = np.zeros((1, config.n_heads, config.headdim, config.d_state), dtype=np.float32)
    return [state for _ in range(config.n_layers) for state in (conv, ssm)]


def export_graphs(
    load: Callable[[], Any], weights_sha256: str, members: int, cache_dir: Path
) -> list[tuple[Path, dict[int, Path]]]:
    """Each member's graphs, read from ``cache_dir / "onnx"`` (hash-checked, see
    ``built_once``), or exported there first from the PyTorch network ``load()`` gives (it
    is loaded only then, so a cached network costs no torch import)."""
    from longscan.encoders.cache import built_once

    network = cache(load)
    folder = cache_dir / "onnx"
    tag = f"scanner-{weights_sha256[:16]}-g{GRAPH_VERSION}-ort{metadata.version('onnxruntime')}"

    def member(index: int) -> Any:
        return network().members[index] if members > 1 else network()

    graphs = []
    for index in range(members):
        embed = built_once(
            folder / f"{tag}-m{index}-embed.onnx",
            lambda path, i=index: _export_embed(member(i), path),
            "ONNX scan network",
        )
        stacks = {
            width: built_once(
                folder / f"{tag}-m{index}-stack{width}.onnx",
                lambda path, i=index, w=width: _export_stack(member(i), w, path),
                "ONNX scan network",
            )
            for width in (WIDE, NARROW)
        }
        graphs.append((embed, stacks))
    return graphs


def _export_embed(model: Any, path: Path) -> None:
    import torch

    config = model.config

    class Embed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, sentences: Any, query: Any, features: Any = None) -> Any:
            steps = self.model.embed(sentences, query, features)
            query_step = self.model.embed_query(query)
            if self.model.config.feature_skip:
                prior = self.model.prior_logits(sentences, query, features)
            else:
                prior = sentences.new_zeros(sentences.shape[:2])
            return steps, query_step, prior

    length = 7
    inputs = [torch.randn(1, length, config.d_input), torch.randn(1, config.d_input)]
    names = ["sentences", "query"]
    if config.n_features:
        inputs.append(torch.rand(1, length, config.n_features))
        names.append("features")
    axes = {"sentences": {1: "steps"}, "features": {1: "steps"}, "steps": {1: "steps"}}
    axes["prior"] = {1: "steps"}
    _trace(Embed(), tuple(inputs), names, ["steps", "query_step", "prior"], axes, path)


def _export_stack(model: Any, width: int, path: Path) -> None:
    import torch

    config = model.config

    class Stack(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, steps: Any, mask: Any, *flat: Any) -> Any:
            states = [(flat[2 * i], flat[2 * i + 1]) for i in range(config.n_layers)]
            hidden = steps
            for i, block in enumerate(self.model.layers):
                hidden, states[i] = block(hidden, state=states[i], mask=mask)
            logits = self.model._logits(hidden)
            return (logits, *[tensor for state in states for tensor in state])

    states = [torch.from_numpy(s) for s in _zero_states(config)]
    steps = torch.randn(1, width, config.d_model)
    mask = torch.arange(width)[None] < width - 3  # padded, so the trace keeps the mask's path
    names = state_names(config)
    _trace(
        Stack(),
        (steps, mask, *states),
        ["steps", "mask", *names],
        ["logits", *(f"next_{name}" for name in names)],
        {},
        path,
    )


def _trace(
    module: Any,
    inputs: tuple[Any, ...],
    input_names: list[str],
    output_names: list[str],
    axes: dict[str, dict[int, str]],
    path: Path,
) -> None:
    """Trace ``module`` in eval mode to ONNX at ``path``, without the tracer's warnings."""
    import warnings

    import torch

    from longscan.encoders.bert import ONNX_OPSET

    module.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=input_names,
            output_names=output_names,
            dynamic_axes={
                n: axis for n, axis in axes.items() if n in (*input_names, *output_names)
            },
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
