"""How the float32 graphs keep their weights on disk: in fewer bits, expanded back to float32
when ONNX Runtime first optimises a graph (``bert.onnx_session``), so a question still runs
float32 arithmetic while the package that carries the graphs stays small.

- ``w16``: the word-piece table as int8 per row, every other matrix as float16.
- ``w8``: every weight matrix as int8 with one scale per output channel (per row for a
  lookup table): a quarter of float32, and further from it.

Which graph stores how, by what its output must keep (docs/experiments.md, "Weights stored
in fewer bits"): the dense baselines' encoder (``ENCODER_STORAGE``), whose vectors stay
within cosine 0.9999 of PyTorch's, and the re-scorer (``RESCORER_STORAGE``), whose score is
held against the abstention threshold, in ``w16``; the extractive reader
(``READER_STORAGE``), which picks the best span, in ``w8``.

In the stored graph a ``DequantizeLinear`` or ``Cast`` node stands before each such weight.
ONNX Runtime's constant folding turns them back into float32 constants when the graph is
optimised (told to fold ``DequantizeLinear`` too, ``FOLD_DEQUANTIZE``), and that optimised
form is what every later session loads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

STORAGES = ("w8", "w16")
ENCODER_STORAGE = "w16"
RESCORER_STORAGE = "w16"  # all-int8 moved a short page's best score across the threshold
READER_STORAGE = "w8"
# Tensors smaller than this (biases, norms, the token-type table) stay float32: together
# they are under 1% of a MiniLM graph.
SMALLEST = 65_536
# A lookup table this large is a vocabulary, mostly rows that a text never reads: ``w16``
# stores it in int8 (the position table, read by every text, stays float16).
VOCABULARY = 1_000_000
# The session setting that lets constant folding expand DequantizeLinear nodes (by default
# ONNX Runtime keeps them for its quantised-kernel fusions, which these graphs do not use).
FOLD_DEQUANTIZE = ("session.disable_quant_qdq", "1")


def store_weights(path: Path, storage: str) -> None:
    """Rewrite the ONNX graph at ``path`` with its large float32 weights stored as
    ``storage`` says (``STORAGES``); the graph computes what it did, from rounded weights.

    Raises:
        ValueError: an unknown storage.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if storage not in STORAGES:
        raise ValueError(f"unknown weight storage {storage!r}; use one of {STORAGES}")
    model = onnx.load(str(path))
    graph = model.graph
    tables = {node.input[0] for node in graph.node if node.op_type == "Gather"}
    transposed = {
        node.input[1]
        for node in graph.node
        if node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
    }
    expanding = []
    for tensor in list(graph.initializer):
        weights = numpy_helper.to_array(tensor)
        if weights.dtype != np.float32 or weights.size < SMALLEST or weights.ndim != 2:
            continue
        graph.initializer.remove(tensor)
        if storage == "w16" and (tensor.name not in tables or weights.size < VOCABULARY):
            half = numpy_helper.from_array(weights.astype(np.float16), tensor.name + ".f16")
            graph.initializer.append(half)
            expanding.append(
                helper.make_node("Cast", [half.name], [tensor.name], to=TensorProto.FLOAT)
            )
            continue
        # one scale per output channel: a table's rows, a Gemm's transposed rows, else columns
        axis = 0 if tensor.name in tables or tensor.name in transposed else 1
        largest = np.abs(weights).max(axis=1 - axis)
        scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
        shape = (-1, 1) if axis == 0 else (1, -1)
        rounded = np.clip(np.rint(weights / scale.reshape(shape)), -127, 127).astype(np.int8)
        stored = numpy_helper.from_array(rounded, tensor.name + ".i8")
        scales = numpy_helper.from_array(scale, tensor.name + ".scale")
        graph.initializer.extend([stored, scales])
        expanding.append(
            helper.make_node(
                "DequantizeLinear", [stored.name, scales.name], [tensor.name], axis=axis
            )
        )
    for node in reversed(expanding):
        graph.node.insert(0, node)
    onnx.save(model, str(path))
