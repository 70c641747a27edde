"""Build-time only (onnx, onnxruntime.transformers): graph variants of the shipped model.

- `fp32_twin`: the int8 model with every quantized MatMul replaced by a float MatMul of its
  dequantized weights: the same model in fp32 (what int8 is compared against; its weights carry
  the int8 rounding, so fidelity figures measure activation quantization only).
- `fuse`: onnxruntime's transformer optimizer (attention, skip-layer-norm, bias-GELU fusions).
- `quantize`: dynamic int8 quantization (per channel), optionally keeping some MatMuls in fp32.

    .venv/bin/python models/optimize.py OUT_DIR      # writes the variants tests/bench compares
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "models" / "companion-empathy-1.onnx"
HEADS, HIDDEN = 12, 384


SHOWN = ("Attention", "SkipLayerNormalization", "BiasGelu", "Gelu", "FastGelu", "MatMulInteger",
         "DynamicQuantizeMatMul", "MatMul", "LayerNormalization", "FusedMatMul")  # fmt: skip


def fp32_twin(src: Path, dst: Path) -> Path:
    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    consumers = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            consumers[i].append(n)
    drop, add = set(), []
    for node in list(graph.node):
        if node.op_type != "MatMulInteger":
            continue
        xq, wq_name, _, wzp_name = node.input
        quant = producer[xq]  # DynamicQuantizeLinear(x)
        x = quant.input[0]
        wq = numpy_helper.to_array(inits[wq_name]).astype(np.float32)
        wzp = numpy_helper.to_array(inits[wzp_name]).astype(np.float32)
        scale_name = wq_name.replace("_quantized", "_scale")
        ws = numpy_helper.to_array(inits[scale_name]).astype(np.float32)
        w = (wq - wzp) * ws  # per-channel scale and zero point broadcast over output columns
        (cast,) = consumers[node.output[0]]
        (mul,) = consumers[cast.output[0]]
        name = wq_name.replace("_quantized", "_fp32")
        graph.initializer.append(numpy_helper.from_array(w, name))
        add.append(helper.make_node("MatMul", [x, name], [mul.output[0]], name=node.name + "_fp32"))
        drop.update(id(n) for n in (node, cast, mul))
    kept = [n for n in graph.node if id(n) not in drop] + add
    del graph.node[:]
    graph.node.extend(_toposort(_prune(kept, {o.name for o in graph.output})))
    used = {i for n in graph.node for i in n.input}
    alive = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(alive)
    onnx.save(model, str(dst))
    return dst


def _prune(nodes: list, outputs: set[str]) -> list:
    while True:
        used = outputs | {i for n in nodes for i in n.input}
        alive = [n for n in nodes if any(o in used for o in n.output)]
        if len(alive) == len(nodes):
            return alive
        nodes = alive


def _toposort(nodes: list) -> list:
    made = {o for n in nodes for o in n.output}
    ready: set[str] = set()
    out, pending = [], list(nodes)
    while pending:
        rest = []
        for n in pending:
            if all(i == "" or i not in made or i in ready for i in n.input):
                out.append(n)
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise ValueError("graph has a cycle")
        pending = rest
    return out


def fuse(src: Path, dst: Path) -> Path:
    from onnxruntime.transformers.optimizer import optimize_model

    opt = optimize_model(str(src), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                         opt_level=1, use_gpu=False)  # fmt: skip
    opt.save_model_to_file(str(dst))
    return dst


def quantize(src: Path, dst: Path, exclude: list[str] | None = None) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(src, dst, per_channel=True, weight_type=QuantType.QInt8,
                     nodes_to_exclude=exclude or [])  # fmt: skip
    return dst


def op_counts(path: Path) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node))


def variants(out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    twin = fp32_twin(SHIPPED, out / "twin.fp32.onnx")
    fused = fuse(twin, out / "fused.fp32.onnx")
    # Layer 0 in fp32: the cheapest exclusion that lifts minimum cosine over 0.98 in a sweep
    # (per projection type and per layer, 300 dev situations: none 0.956, layer 0 0.986, the six
    # FFN output projections 0.990 but a third of the FFN weights).
    layer0 = [n.name for n in onnx.load(str(fused)).graph.node
              if n.op_type == "MatMul" and n.name.startswith("/layers.0/")]  # fmt: skip
    return {
        "int8 (shipped)": SHIPPED,
        "fp32 twin": twin,
        "fp32 fused": fused,
        "int8 fused": quantize(fused, out / "fused.int8.onnx"),
        "int8 fused, layer 0 fp32": quantize(fused, out / "fused.int8-l0.onnx", layer0),
    }


def runtime_ops(path: Path, out: Path) -> dict[str, int]:
    """Op counts of the graph onnxruntime actually runs (after its own load-time fusions)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(out)
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return op_counts(out)


if __name__ == "__main__":
    for name, path in variants(Path(sys.argv[1])).items():
        ops = op_counts(path)
        shown = {k: v for k, v in sorted(ops.items()) if k in SHOWN}
        size = path.stat().st_size / 1e6
        print(f"{name}: {path} ({size:.1f} MB, {sum(ops.values())} nodes) {shown}")
