"""Build-time only (onnx, onnxruntime): graph and quantization variants of the shipped model, which
tests/bench compares (a tool: it sits on models/graph.py, models/quant.py and
models/deterministic.py).

- `variants`: graph and quantization variants of the fp32 build.
- `dynamic_int8_all_units`: dynamic per-channel int8 of a fused graph with no unit kept in fp32.
- `ulp_perturbed`: the x86-only stand-in for arm64 (issue 16): the output of every op whose fp32
  result differs between x86 and ARM (FP32_ACTIVATION_OPS: layer norms, attention's softmax)
  multiplied by 1 + k*2^-23 per column (k in -1, 0, 0, 1, fixed seed). Its cosine to the
  unperturbed model tracks the emulated arm64 parity (models/README.md).
- `static_scales`: DynamicQuantizeLinear replaced by QuantizeLinear with scales calibrated on
  given token windows (a variant to compare; it does not fix the parity, see models/README.md).
- `exposed`: every node output made a graph output, for `deploy/arm64/parity.py trace`.

    .venv/bin/python models/optimize.py OUT_DIR      # writes the variants, prints their ops
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import onnx

from companion.model.encode import resolve_model
from models.graph import HIDDEN, fuse
from models.quant import quantize, quantize_fused

SHIPPED = resolve_model()  # the newest shipped model
# the fp32 export it was quantized from, in build.py's default scratch
FP32_BUILD = Path(__file__).resolve().parent / ".build" / (SHIPPED.stem + ".fp32.onnx")

SHOWN = ("Attention", "QAttention", "SkipLayerNormalization", "BiasGelu", "Gelu", "FastGelu",
         "MatMulInteger", "DynamicQuantizeMatMul", "MatMul", "LayerNormalization", "FusedMatMul",
         "EmbedLayerNormalization", "QEmbedLayerNormalization")  # fmt: skip


def dynamic_int8_all_units(src: Path, dst: Path, *, reduce_range: bool,
                           unsigned: bool = False) -> Path:  # fmt: skip
    """Dynamic per-channel int8 of a fused graph, every unit quantized (a variant to compare)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    weight = QuantType.QUInt8 if unsigned else QuantType.QInt8
    quantize_dynamic(src, dst, per_channel=True, reduce_range=reduce_range, weight_type=weight,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
    return dst


# Ops whose fp32 results differ in the last bit between x86 and the emulated Cortex-A72 on the
# same inputs (onnxruntime 1.32, probed one op at a time): the reductions inside them are summed
# in a different order. MatMul, BiasGelu, Erf, Exp, Sqrt, Div, Add, Mul, ReduceMax and
# DynamicQuantizeLinear gave the same bits. Value: the width of the output's last axis.
FP32_ACTIVATION_OPS = {"EmbedLayerNormalization": HIDDEN, "QEmbedLayerNormalization": HIDDEN,
                      "Attention": HIDDEN, "QAttention": HIDDEN, "SkipLayerNormalization": HIDDEN,
                      "LayerNormalization": HIDDEN}  # fmt: skip


def ulp_perturbed(src: Path, dst: Path, seed: int = 0) -> Path:
    """`src` with a last-bit perturbation after every fp32 activation op (see the docstring)."""
    import numpy as np
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    rng = np.random.default_rng(seed)
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        width = FP32_ACTIVATION_OPS.get(node.op_type)
        if width is None:
            continue
        out = node.output[0]
        new = out + "_ulp"
        for other in model.graph.node:  # consumers read the perturbed tensor
            other.input[:] = [new if i == out else i for i in other.input]
        for graph_out in model.graph.output:
            if graph_out.name == out:
                raise ValueError(f"{out} is a graph output; perturb only inner tensors")
        factor = (1 + rng.choice([-1, 0, 0, 1], width) * 2.0**-23).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(factor, new + "_factor"))
        nodes.append(helper.make_node("Mul", [out, new + "_factor"], [new], name=new))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, str(dst))
    return dst


def static_scales(dynamic: Path, fused: Path, windows: list, dst: Path) -> Path:
    """`dynamic` (quantize_fused's output) with each DynamicQuantizeLinear replaced by a
    QuantizeLinear whose u8 scale and zero point cover the range (with 0) of its input over
    `windows` (token id arrays), measured on the fp32 `fused` graph."""
    import numpy as np
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    model = onnx.load(str(dynamic))
    dql = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]
    probe = onnx.load(str(fused))
    for n in dql:
        probe.graph.output.append(helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT,
                                                                None))  # fmt: skip
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(probe.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [n.input[0] for n in dql]
    lo, hi = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
    for ids in windows:
        values = sess.run(names, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        for name, v in zip(names, values, strict=True):
            lo[name], hi[name] = min(lo[name], float(v.min())), max(hi[name], float(v.max()))
    nodes = []
    for node in model.graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        x, (q, scale, zero) = node.input[0], node.output
        s = np.float32((hi[x] - lo[x]) / 255)
        z = np.array(np.clip(np.round(-lo[x] / s), 0, 255), np.uint8)
        model.graph.initializer.extend([numpy_helper.from_array(np.array(s, np.float32), scale),
                                        numpy_helper.from_array(z, zero)])  # fmt: skip
        nodes.append(helper.make_node("QuantizeLinear", [x, scale, zero], [q], name=node.name))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, str(dst))
    return dst


def exposed(src: Path, dst: Path) -> Path:
    """`src` with every node output (except integer mask indices) also a graph output, in node
    order, for layer-by-layer traces on two machines."""
    from onnx import helper

    model = onnx.shape_inference.infer_shapes(onnx.load(str(src)))
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(model.graph.value_info) + list(model.graph.output)}  # fmt: skip
    have = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for out in node.output:
            # contrib ops have no shape inference here: their float outputs are typed by hand
            known = out in types or (node.domain == "com.microsoft" and "mask" not in out)
            if out and out not in have and known:
                elem = types.get(out, onnx.TensorProto.FLOAT)
                model.graph.output.append(helper.make_tensor_value_info(out, elem, None))
                have.add(out)
    onnx.save(model, str(dst))
    return dst


def op_counts(path: Path) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node))


def variants(out: Path, fp32: Path = FP32_BUILD) -> dict[str, Path]:
    """The shipped int8 model beside the fp32 build it was quantized from and alternatives."""
    if not fp32.exists():
        raise SystemExit(f"{fp32} is missing: run models/build.py (--folds 0) to make it")
    out.mkdir(parents=True, exist_ok=True)
    fused = fuse(fp32, out / "fused.fp32.onnx")
    all_int8 = out / "fused.int8-rr.onnx"
    quantize_fused(fused, all_int8, keep_fp32=[])
    return {
        "int8 (shipped)": SHIPPED,
        "fp32 build": fp32,
        "fp32 fused": fused,
        "int8 fused, 7-bit, no fp32 units": all_int8,
        "int8 fused, 8-bit s8 (old)": dynamic_int8_all_units(fused, out / "fused.int8-s8.onnx",
                                                             reduce_range=False),
        "int8 deterministic (candidate)": quantize(fp32, out / "det.int8.onnx"),
    }  # fmt: skip


def runtime_ops(path: Path, out: Path) -> dict[str, int]:
    """Op counts of the graph onnxruntime actually runs (after its own load-time fusions)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(out)
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return op_counts(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out_dir", type=Path, help="where the variants are written")
    args = ap.parse_args()
    for name, path in variants(args.out_dir).items():
        ops = op_counts(path)
        shown = {k: v for k, v in sorted(ops.items()) if k in SHOWN}
        size = path.stat().st_size / 1e6
        print(f"{name}: {path} ({size:.1f} MB, {sum(ops.values())} nodes) {shown}")


if __name__ == "__main__":
    main()
