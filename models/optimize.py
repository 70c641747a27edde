"""Build-time only (onnx, onnxruntime.transformers): the graph steps of the shipped model.

- `fuse`: onnxruntime's transformer optimizer (model_type bert): Attention, SkipLayerNormalization,
  BiasGelu and EmbedLayerNormalization. Attention fuses because models/minilm.py builds the
  attention mask in the order the optimizer matches (Unsqueeze, Cast, Sub, Mul).
- `unit_nodes`: the graph nodes of named units (`layers.I.qkv` ...), fused or not, for
  build.py's QUANT["fp32"] (the units kept in fp32).
- `variants`: graph and quantization variants of the fp32 build that tests/bench compares.
- `ulp_perturbed`: the x86-only stand-in for arm64 (issue 16): the output of every op whose fp32
  result differs between x86 and ARM (FP32_ACTIVATION_OPS: layer norms, attention's softmax)
  multiplied by 1 + k*2^-23 per column (k in -1, 0, 0, 1, fixed seed). Its cosine to the
  unperturbed model tracks the emulated arm64 parity (models/README.md).
- `static_scales`: DynamicQuantizeLinear replaced by QuantizeLinear with scales calibrated on
  given token windows (a variant to compare; it does not fix the parity, see models/README.md).
- `weight_only`: MatMulNBits weight-only int4/int8 of the fused graph (variants to compare).
- `exposed`: every node output made a graph output, for `deploy/arm64/parity.py trace`.
- `deterministic` (in models/deterministic.py, re-exported here): the shipped int8 scheme with
  the same bits on x86 and ARM (issue 16).

    .venv/bin/python models/optimize.py OUT_DIR      # writes the variants, prints their ops
"""

from __future__ import annotations

import collections
import logging
import sys
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "models" / "companion-empathy-1.onnx"
FP32_BUILD = REPO / "models" / ".build" / "companion-empathy-1.fp32.onnx"  # from build.py


from deterministic import HEADS, HIDDEN, deterministic  # noqa: E402, F401  (re-exported)

SHOWN = ("Attention", "QAttention", "SkipLayerNormalization", "BiasGelu", "Gelu", "FastGelu",
         "MatMulInteger", "DynamicQuantizeMatMul", "MatMul", "LayerNormalization", "FusedMatMul",
         "EmbedLayerNormalization", "QEmbedLayerNormalization", "MatMulNBits")  # fmt: skip


def fuse(src: Path, dst: Path) -> Path:
    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.WARNING)
    opt = optimize_model(str(src), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                         opt_level=1, use_gpu=False)  # fmt: skip
    opt.save_model_to_file(str(dst))
    return dst


ROLES = ("qkv", "attn_out", "inter", "out")  # the four weight matrices of each encoder layer


def all_units(layers: int = 6) -> list[str]:
    """Every quantizable unit: `layers.I.ROLE`, the emotion `head` and the token `embedding`."""
    return [f"layers.{i}.{r}" for i in range(layers) for r in ROLES] + ["head", "embedding"]


def unit_nodes(graph, units: list[str]) -> list[str]:
    """Node names of `units` in an exported graph, fused (Attention) or not (query/key/value)."""
    by_name = {n.name: n for n in graph.node}
    producer = {o: n for n in graph.node for o in n.output}
    names = []
    for unit in units:
        found: list[str] = []
        if unit == "head":
            found = [n for n in ("/head/Gemm", "/head/MatMul") if n in by_name]
            # quantize_dynamic first rewrites a Gemm as MatMul + Add named after it
            found += [n + "_MatMul" for n in found if n.endswith("Gemm")]
        elif unit == "embedding":
            found = [n.name for n in graph.node if n.op_type == "EmbedLayerNormalization"
                     or (n.op_type == "Gather" and "word.weight" in n.input)]  # fmt: skip
        elif unit.startswith("layers.") and unit.split(".")[-1] == "qkv":
            i = unit.split(".")[1]
            found = [f"/layers.{i}/{p}/MatMul" for p in ("query", "key", "value")]
            found = [n for n in found if n in by_name]
            attn_out = by_name.get(f"/layers.{i}/attn_out/MatMul")
            if not found and attn_out is not None:
                att = producer.get(attn_out.input[0])
                found = [att.name] if att is not None and att.op_type == "Attention" else []
        elif unit.startswith("layers."):
            _, i, role = unit.split(".")
            found = [n for n in (f"/layers.{i}/{role}/MatMul",) if n in by_name]
        if not found:
            raise ValueError(f"no node in the graph for quantization unit {unit!r}")
        names += found
    return names


def quantize(src: Path, dst: Path, *, reduce_range: bool, unsigned: bool = False) -> Path:
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


def weight_only(src: Path, dst: Path, bits: int, accuracy_level: int | None = None) -> Path:
    """Every MatMul with a constant weight as MatMulNBits (blocks of 32 along the input axis,
    symmetric), activations stay fp32. accuracy_level 4 lets the kernel quantize activations to
    int8 per block for the dot products. The fused Attention keeps its fp32 query/key/value
    weights: the quantizer only rewrites MatMul nodes."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(src)), bits=bits, block_size=32,
                                     is_symmetric=True, accuracy_level=accuracy_level)  # fmt: skip
    quantizer.process()
    quantizer.model.save_model_to_file(str(dst))
    return dst


def op_counts(path: Path) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node))


def variants(out: Path, fp32: Path = FP32_BUILD) -> dict[str, Path]:
    """The shipped int8 model beside the fp32 build it was quantized from and alternatives."""
    if not fp32.exists():
        raise SystemExit(f"{fp32} is missing: run models/build.py (--folds 0) to make it")
    sys.path.insert(0, str(REPO / "models"))
    from build import QUANT, WINDOW, quantize_fused

    out.mkdir(parents=True, exist_ok=True)
    fused = fuse(fp32, out / "fused.fp32.onnx")
    all_int8 = out / "fused.int8-rr.onnx"
    quantize_fused(fused, all_int8, keep_fp32=[])
    return {
        "int8 (shipped)": SHIPPED,
        "fp32 build": fp32,
        "fp32 fused": fused,
        "int8 fused, 7-bit, no fp32 units": all_int8,
        "int8 fused, 8-bit s8 (old)": quantize(fused, out / "fused.int8-s8.onnx",
                                               reduce_range=False),
        "int8 deterministic (candidate)": deterministic(fp32, out / "det.int8.onnx",
                                                        QUANT["fp32"], WINDOW),
        "MatMulNBits int4 fused": weight_only(fused, out / "fused.q4.onnx", 4),
        "MatMulNBits int4 fused, int8 compute": weight_only(fused, out / "fused.q4a4.onnx", 4, 4),
        "MatMulNBits int8 fused": weight_only(fused, out / "fused.q8.onnx", 8),
        "MatMulNBits int8 fused, int8 compute": weight_only(fused, out / "fused.q8a4.onnx", 8, 4),
    }  # fmt: skip


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
