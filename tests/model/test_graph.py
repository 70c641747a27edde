"""The shipped int8 graph itself: the same bits on x86 and ARM, and weights that cannot saturate
x86 AVX2.

onnxruntime computes fp32 sums (layer norms, softmax, fused attention) with CPU-specific kernels
whose last bits differ; int8 re-quantization then amplifies one flipped rounding into whole rows
(issue 16, traced in models/README.md). The shipped graph has none of those ops.

On x86 without VNNI, onnxruntime multiplies u8 activations by s8 weights with vpmaddubsw, which
adds two u8*s8 products into a saturating int16; ARM's kernels widen and do not saturate, so a
weight pair with |w1| + |w2| > 128 can make x86 and arm64 compute different integers (issue 16).
The model file is read with a small protobuf reader: the runtime and test installs have no `onnx`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from companion.model.encode import default_model_dir

INT8, UINT8 = 3, 2  # onnx TensorProto.DataType


def fields(buf: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of a protobuf message: ints for varints, views for bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield field, value
        elif wire == 2:
            n, i = _varint(buf, i)
            yield field, buf[i : i + n]
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _dims(value: int | memoryview) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, i = [], 0
    while i < len(value):  # packed repeated int64
        d, i = _varint(value, i)
        out.append(d)
    return out


@pytest.fixture(scope="module")
def graph() -> dict:
    """Nodes (op type, name, inputs) and integer initializers of the shipped model."""
    return read_graph(max(default_model_dir().glob("companion-empathy-*.onnx")))


def read_graph(path: Path) -> dict:
    model = memoryview(path.read_bytes())
    (graph_bytes,) = [v for f, v in fields(model) if f == 7 and isinstance(v, memoryview)]
    nodes, weights, names = [], {}, set()
    for f, v in fields(graph_bytes):
        assert isinstance(v, memoryview) or f not in (1, 5)
        if f == 1 and isinstance(v, memoryview):
            parts: dict[str, list[str]] = {"input": [], "name": [], "op": []}
            for nf, nv in fields(v):
                key = {1: "input", 3: "name", 4: "op"}.get(nf)
                if key and isinstance(nv, memoryview):
                    parts[key].append(bytes(nv).decode())
            nodes.append((parts["op"][0], "".join(parts["name"]), parts["input"]))
        elif f == 5 and isinstance(v, memoryview):
            t: dict = {"dims": [], "type": 0, "name": "", "raw": b""}
            for tf, tv in fields(v):
                if tf == 1:
                    t["dims"] += _dims(tv)
                elif tf == 2:
                    t["type"] = tv
                elif tf == 8 and isinstance(tv, memoryview):
                    t["name"] = bytes(tv).decode()
                elif tf == 9 and isinstance(tv, memoryview):
                    t["raw"] = bytes(tv)
            names.add(t["name"])
            if t["type"] in (INT8, UINT8) and t["raw"]:
                dtype = np.int8 if t["type"] == INT8 else np.uint8
                weights[t["name"]] = np.frombuffer(t["raw"], dtype).reshape(t["dims"])
    return {"nodes": nodes, "weights": weights, "initializers": names, "path": path}


# Ops whose fp32 results differ between x86 and ARM kernels (found by deploy/arm64/parity.py
# trace), and the fused int8 kernels that differ too.
CPU_DEPENDENT = {
    "LayerNormalization", "SkipLayerNormalization", "EmbedLayerNormalization",
    "QEmbedLayerNormalization", "Softmax", "Attention", "QAttention", "ReduceMean",
    "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
}  # fmt: skip


def test_no_op_whose_results_differ_between_x86_and_arm(graph: dict) -> None:
    ops = Counter(op for op, _, _ in graph["nodes"])
    assert not CPU_DEPENDENT & set(ops), CPU_DEPENDENT & set(ops)
    quantized = [(name, inputs) for op, name, inputs in graph["nodes"] if op == "MatMulInteger"]
    # query/key/value are one MatMul per layer: three consumers of one quantized activation
    # would be fused by onnxruntime into a kernel that differs between the CPUs
    assert len([n for n, _ in quantized if "/qkv/" in n]) == 6, quantized
    activations = [inputs[0] for _, inputs in quantized]
    assert len(activations) == len(set(activations)), "a quantized activation feeds two MatMuls"


def test_sidecar_switches_off_the_fusion_that_differs_and_the_runtime_obeys(
    graph: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime as ort

    from companion.model.encode import Encoder

    meta = json.loads(graph["path"].with_name(graph["path"].name + ".json").read_text())
    off = meta["quantization"]["session"]["disabled_optimizers"]
    assert off == ["MatMulIntegerToFloatFusion", "MatMulScaleFusion"]
    seen: list[dict] = []
    real = ort.InferenceSession

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    Encoder.load(graph["path"])
    assert seen and seen[0].get("disabled_optimizers") == off


def test_as_onnxruntime_runs_it_no_op_differs_by_cpu_and_the_shapes_are_constant(
    graph: dict, tmp_path: Path
) -> None:
    """The graph after onnxruntime's own optimizations, with the sidecar's session options: the
    fusions it would make are switched off (FusedMatMul would fold the attention's scale into
    the scores' MatMul), and the head reshapes take constant shapes, not ones computed per
    call from Shape/Gather/Concat (dozens of small nodes a layer, removed for speed)."""
    import onnxruntime as ort

    from companion.model.encode import disabled_optimizers

    meta = json.loads(graph["path"].with_name(graph["path"].name + ".json").read_text())
    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(tmp_path / "runtime.onnx")
    opts.log_severity_level = 3
    ort.InferenceSession(str(graph["path"]), opts, providers=["CPUExecutionProvider"],
                         disabled_optimizers=disabled_optimizers(meta))  # fmt: skip
    ops = Counter(op for op, _, _ in read_graph(tmp_path / "runtime.onnx")["nodes"])
    assert not (CPU_DEPENDENT | {"FusedMatMul"}) & set(ops), ops
    assert ops["MatMulInteger"] == 24 and ops["Reshape"] == 24, ops
    # one Shape for the keys' padding, two for the position ids, none per layer
    assert ops["Shape"] <= 3 and ops["Concat"] <= 1, ops


def test_a_window_longer_than_the_graph_takes_fails_loudly(graph: dict) -> None:
    """The softmax sums pad the keys to the sidecar's window: a longer one must not be cropped
    silently, and the runtime refuses to be configured for one."""
    import onnxruntime as ort

    from companion.errors import ModelError
    from companion.model.encode import Encoder, EncoderConfig

    meta = json.loads(graph["path"].with_name(graph["path"].name + ".json").read_text())
    window = meta["window_tokens"]
    session = ort.InferenceSession(str(graph["path"]), providers=["CPUExecutionProvider"])
    for n in (window, window + 1):
        ids = np.full((1, n), 2154, np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if n == window:
            emb, _ = session.run(None, feeds)
            assert np.isfinite(emb).all()
        else:
            with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="det_sum"):
                session.run(None, feeds)
    with pytest.raises(ModelError, match=f"window_tokens {window + 1} is outside"):
        Encoder.load(graph["path"], EncoderConfig(window_tokens=window + 1))
    assert Encoder.load(graph["path"], EncoderConfig(window_tokens=64)).window == 64


def test_no_int8_weight_pair_can_saturate_avx2(graph: dict) -> None:
    multiplied = [inputs[1] for op, _, inputs in graph["nodes"]
                  if op in ("MatMulInteger", "QAttention")]  # fmt: skip
    assert len(multiplied) >= 12
    for name in multiplied:
        w = graph["weights"][name]
        assert w.dtype == np.int8 and w.ndim == 2, name
        k = w.shape[0] // 2 * 2
        pair = np.abs(w[0:k:2].astype(np.int32)) + np.abs(w[1:k:2].astype(np.int32))
        # 2 * 255 * 64 = 32640 fits int16; any larger pair sum can saturate
        assert pair.max() <= 128, f"{name}: weight pair sum {pair.max()} can saturate"
        assert np.abs(w.astype(np.int32)).max() > 32, f"{name}: 7-bit range left unused"


def test_sidecar_describes_the_quantization(graph: dict) -> None:
    meta = json.loads(graph["path"].with_name(graph["path"].name + ".json").read_text())
    quant = meta["quantization"]
    assert quant["reduce_range"] is True and quant["weight_type"] == "QInt8"
    # float MatMuls by a weight (not the constant vectors that sum layer norms and softmax)
    kept = [name for op, name, inputs in graph["nodes"]
            if op in ("MatMul", "Gemm") and inputs[1] in graph["initializers"]
            and not inputs[1].startswith("det_")]  # fmt: skip
    # every unit the sidecar says is fp32 is a float node in the graph, and no other is
    assert len(kept) == len(quant["fp32"]), (kept, quant["fp32"])
    for unit in quant["fp32"]:  # "layers.2.out" is the node "/layers.2/out/MatMul"
        layer, part = unit.rsplit(".", 1)
        assert any(name.startswith(f"/{layer}/{part}/") for name in kept), (unit, kept)
