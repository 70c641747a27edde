"""models/optimize.py `weight_only`: the MatMulNBits variants tests/bench/bench_graph.py compares.

Build-time code: needs the build extra (onnx, onnx-ir), which the test install does not have,
so it skips there. A small random MatMul graph, not the model: the helper's contract (every
constant-weight MatMul becomes MatMulNBits with the asked bits, blocks of 32, symmetric, the
accuracy level) and that 8-bit weights stay closer to fp32 than 4-bit ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnx_ir")  # onnxruntime's MatMulNBitsQuantizer imports it

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import optimize  # noqa: E402


def tiny_graph(path: Path) -> np.ndarray:
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).normal(size=(64, 96)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="/layers.0/inter/MatMul")],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, 96])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return w


def run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize(("bits", "level"), [(4, None), (4, 4), (8, None), (8, 4)])
def test_every_weight_matmul_becomes_matmulnbits(tmp_path: Path, bits: int, level) -> None:
    src = tiny_graph(tmp_path / "fp32.onnx")
    out = optimize.weight_only(tmp_path / "fp32.onnx", tmp_path / "q.onnx", bits, level)
    nodes = onnx.load(str(out)).graph.node
    assert [n.op_type for n in nodes] == ["MatMulNBits"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in nodes[0].attribute}
    assert attrs["bits"] == bits and attrs["block_size"] == 32
    assert attrs.get("accuracy_level") == level  # absent when not asked for
    assert len(nodes[0].input) == 3  # weights and scales, no zero points: symmetric
    x = np.random.default_rng(1).normal(size=(1, 7, 64)).astype(np.float32)
    want = x @ src
    got = run(out, x)
    assert got.shape == want.shape
    rel = np.abs(got - want).max() / np.abs(want).max()
    assert rel < (0.2 if bits == 4 else 0.015), rel


def test_8_bit_weights_stay_closer_to_fp32_than_4_bit(tmp_path: Path) -> None:
    w = tiny_graph(tmp_path / "fp32.onnx")
    x = np.random.default_rng(2).normal(size=(1, 9, 64)).astype(np.float32)
    err = {}
    for bits in (4, 8):
        out = optimize.weight_only(tmp_path / "fp32.onnx", tmp_path / f"q{bits}.onnx", bits)
        err[bits] = float(np.abs(run(out, x) - x @ w).mean())
    assert 0 < err[8] < err[4] / 8, err
