"""Weights stored in fewer bits: the graph shrinks, computes nearly what it did, and once
ONNX Runtime has optimised it runs on float32 constants again (no expansion per question)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from longscan.encoders.bert import _optimize
from longscan.encoders.storage import store_weights

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")


def lookup_then_project(path: Path) -> None:
    """A word-piece table (Gather), a matrix product and a Gemm with a transposed weight:
    the three ways a MiniLM graph reads its weights."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {
        "table": rng.normal(0, 0.05, (3000, 384)),
        "matrix": rng.normal(0, 0.05, (384, 384)),
        "head": rng.normal(0, 0.05, (256, 384)),  # Gemm's B, transposed
        "bias": rng.normal(0, 0.05, (256,)),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "ids"], ["rows"]),
            helper.make_node("MatMul", ["rows", "matrix"], ["projected"]),
            helper.make_node("Gemm", ["projected", "head", "bias"], ["out"], transB=1),
        ],
        "probe",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", 256])],
        [numpy_helper.from_array(w.astype(np.float32), name) for name, w in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))


def run(path: Path, ids: np.ndarray) -> np.ndarray:
    """``path`` run as written, every node as it stands (as ``bert.onnx_session`` runs)."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


@pytest.mark.parametrize(
    ("storage", "smaller", "closeness"), [("w8", 3.5, 1e-2), ("w16", 2.9, 6e-3)]
)
def test_stored_weights_shrink_the_graph_and_keep_its_results(
    tmp_path: Path, storage: str, smaller: float, closeness: float
) -> None:
    original, stored = tmp_path / "float32.onnx", tmp_path / f"{storage}.onnx"
    lookup_then_project(original)
    lookup_then_project(stored)
    store_weights(stored, storage)
    assert original.stat().st_size / stored.stat().st_size > smaller
    ids = np.array([0, 17, 2999, 1234])
    expected = run(original, ids)
    got = run(stored, ids)
    assert got.dtype == np.float32
    relative = np.abs(got - expected).max() / np.abs(expected).max()
    assert 0 < relative < closeness  # rounded weights, not the same ones

    optimised = tmp_path / f"{storage}.optimized.onnx"
    _optimize(stored, optimised)
    nodes = {node.op_type for node in onnx.load(str(optimised)).graph.node}
    assert not nodes & {"DequantizeLinear", "Cast"}  # expanded once, into float32 constants
    np.testing.assert_allclose(run(optimised, ids), got, rtol=1e-5, atol=1e-6)


def test_an_unknown_storage_is_refused(tmp_path: Path) -> None:
    graph = tmp_path / "float32.onnx"
    lookup_then_project(graph)
    before = graph.read_bytes()
    with pytest.raises(ValueError, match="unknown weight storage 'w4'"):
        store_weights(graph, "w4")
    assert graph.read_bytes() == before
