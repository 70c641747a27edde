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
- `deterministic`: a candidate int8 scheme with the same bits on x86 and ARM (issue 16): the
  unfused fp32 build with LayerNormalization and Softmax rebuilt from ops that onnxruntime
  computes identically on both (sums as MatMul with a constant vector, elementwise ops, Exp,
  Sqrt, ReduceMax), query/key/value merged, per-row int8 embedding tables dequantized after the
  gather, then the dynamic int8 scheme of build.QUANT (its fp32 units kept). Run it with
  onnxruntime's MatMulIntegerToFloatFusion disabled: the kernels that fusion makes differ.

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
HEADS, HIDDEN = 12, 384


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


def _layer_norm(node, p: str, eps_name: str) -> list:
    """LayerNormalization over the last axis (HIDDEN wide) from bit-identical ops."""
    from onnx import helper

    (x, gamma, beta), y = node.input, node.output[0]
    mk = helper.make_node
    return [mk("MatMul", [x, "det_mean"], [p + "mean"], name=p + "mean"),
            mk("Sub", [x, p + "mean"], [p + "d"], name=p + "sub"),
            mk("Mul", [p + "d", p + "d"], [p + "d2"], name=p + "sq"),
            mk("MatMul", [p + "d2", "det_mean"], [p + "var"], name=p + "var"),
            mk("Add", [p + "var", eps_name], [p + "ve"], name=p + "eps"),
            mk("Sqrt", [p + "ve"], [p + "std"], name=p + "sqrt"),
            mk("Div", [p + "d", p + "std"], [p + "n"], name=p + "div"),
            mk("Mul", [p + "n", gamma], [p + "ng"], name=p + "gamma"),
            mk("Add", [p + "ng", beta], [y], name=p + "beta")]  # fmt: skip


def _key_pads(x: str) -> list:
    """The Pad amounts that take the keys of `x` (scores, last axis) to the graph's key limit,
    computed once for every layer. Clamped at 0, so a longer window fails loudly in the sum's
    MatMul instead of being cropped."""
    from onnx import helper

    mk = helper.make_node
    return [mk("Shape", [x], ["det_keys"], start=-1, name="det_keys"),
            mk("Sub", ["det_max_tokens", "det_keys"], ["det_pad"], name="det_padn"),
            mk("Max", ["det_pad", "det_zero"], ["det_pad0"], name="det_pad0"),
            mk("Concat", ["det_zeros7", "det_pad0"], ["det_pads"], axis=0,
               name="det_pads")]  # fmt: skip


def _softmax(node, p: str) -> list:
    """Softmax over the last axis (the keys, up to the graph's key limit) from bit-identical
    ops. The sum is a MatMul with a constant ones vector over the keys zero-padded to the limit
    (`_key_pads`): with a ones vector made at run time for the actual length (not prepacked) x86
    and ARM sum in different orders from 6 keys on. The limit is the encoder's window, not
    MiniLM's 512 positions: the Pad writes limit/keys times the scores (a quarter as many at
    128)."""
    from onnx import helper

    x, y = node.input[0], node.output[0]
    mk = helper.make_node
    return [mk("ReduceMax", [x], [p + "max"], axes=[-1], keepdims=1, name=p + "max"),
            mk("Sub", [x, p + "max"], [p + "sh"], name=p + "sub"),
            mk("Exp", [p + "sh"], [p + "e"], name=p + "exp"),
            mk("Pad", [p + "e", "det_pads"], [p + "ep"], name=p + "padded"),
            mk("MatMul", [p + "ep", "det_ones"], [p + "sum"], name=p + "sum"),
            mk("Div", [p + "e", p + "sum"], [y], name=p + "div")]  # fmt: skip


def _row_int8_gather(node, table, p: str) -> tuple[list, list]:
    """A Gather from an fp32 table as a gather from its per-row symmetric int8 copy times the
    gathered row scales (elementwise after the gather, so exact on both CPUs)."""
    import numpy as np
    from onnx import helper, numpy_helper

    t = numpy_helper.to_array(table)
    scale = (np.abs(t).max(1, keepdims=True) / 127).astype(np.float32)
    q = np.round(t / np.maximum(scale, 1e-30)).astype(np.int8)
    base = table.name.removesuffix(".weight")
    inits = [numpy_helper.from_array(q, base + "_int8"),
             numpy_helper.from_array(scale, base + "_row_scale")]  # fmt: skip
    mk = helper.make_node
    nodes = [mk("Gather", [base + "_int8", node.input[1]], [p + "q"], name=p + "q"),
             mk("Cast", [p + "q"], [p + "f"], to=onnx.TensorProto.FLOAT, name=p + "cast"),
             mk("Gather", [base + "_row_scale", node.input[1]], [p + "s"], name=p + "s"),
             mk("Mul", [p + "f", p + "s"], [node.output[0]], name=p + "deq")]  # fmt: skip
    return nodes, inits


def _merge_qkv(graph) -> None:
    """Each layer's query, key and value MatMuls as one MatMul, one bias Add and a Split:
    quantized, the three would share one DynamicQuantizeLinear, which onnxruntime fuses into
    MatMulIntegerToFloat, whose results differ between x86 and ARM; with one consumer the
    quantized MatMul stays a chain of ops that give the same bits on both."""
    import numpy as np
    from onnx import helper, numpy_helper

    weights = {i.name: i for i in graph.initializer}
    by_name = {n.name: n for n in graph.node}
    for i in range(len([n for n in graph.node if n.name.endswith("/query/MatMul")])):
        roles = ("query", "key", "value")
        parts = [by_name[f"/layers.{i}/{r}/MatMul"] for r in roles]
        adds = [by_name[f"/layers.{i}/{r}/Add"] for r in roles]  # bias + MatMul output
        w = np.concatenate([numpy_helper.to_array(weights[n.input[1]]) for n in parts], axis=1)
        b = np.concatenate([numpy_helper.to_array(weights[n.input[0]]) for n in adds])
        name = f"/layers.{i}/qkv/MatMul"
        graph.initializer.extend([numpy_helper.from_array(w, f"layers.{i}.qkv.weight"),
                                  numpy_helper.from_array(b, f"layers.{i}.qkv.bias")])  # fmt: skip
        at = list(graph.node).index(parts[0])
        for n in parts + adds:
            graph.node.remove(n)
        mk = helper.make_node
        qkv, biased = name + "_output_0", f"/layers.{i}/qkv/Add_output_0"
        graph.node.insert(at, mk("MatMul", [parts[0].input[0], f"layers.{i}.qkv.weight"], [qkv],
                                 name=name))  # fmt: skip
        graph.node.insert(at + 1, mk("Add", [f"layers.{i}.qkv.bias", qkv], [biased],
                                     name=f"/layers.{i}/qkv/Add"))  # fmt: skip
        graph.node.insert(at + 2, mk("Split", [biased], [n.output[0] for n in adds], axis=-1,
                                     name=name + "_split"))  # fmt: skip


def _static_shapes(graph) -> None:
    """The attention's head reshapes and score scale as constants (0 in a Reshape target copies
    that axis): the export computes them per layer from Shape, Gather, Unsqueeze and Concat (about
    25 small nodes a layer, a few microseconds each on every call). The values are the same:
    [batch, keys, HEADS, HIDDEN / HEADS] for query, key and value, [batch, keys, HIDDEN] for the
    heads' output (the only Reshape fed by a Transpose), sqrt(HIDDEN / HEADS) for the scale."""
    import numpy as np
    from onnx import numpy_helper

    head = HIDDEN // HEADS
    graph.initializer.extend([
        numpy_helper.from_array(np.array([0, 0, HEADS, head], np.int64), "det_heads_shape"),
        numpy_helper.from_array(np.array([0, 0, HIDDEN], np.int64), "det_hidden_shape"),
        numpy_helper.from_array(np.float32(head) ** np.float32(0.5), "det_head_scale"),
    ])  # fmt: skip
    made_by = {o: n for n in graph.node for o in n.output}
    for n in graph.node:
        if n.op_type == "Reshape" and n.name.startswith("/layers."):
            fed_by_transpose = made_by[n.input[0]].op_type == "Transpose"
            n.input[1] = "det_hidden_shape" if fed_by_transpose else "det_heads_shape"
        elif n.op_type == "Div" and made_by.get(n.input[1], n).op_type == "Pow":
            n.input[1] = "det_head_scale"
    _prune(graph)


def _prune(graph) -> None:
    """Drop the nodes nothing reads any more (repeated: a dropped node can orphan its inputs)."""
    outputs = {o.name for o in graph.output}
    while True:
        read = {i for n in graph.node for i in n.input} | outputs
        dead = [n for n in graph.node if not any(o in read for o in n.output)]
        if not dead:
            return
        for n in dead:
            graph.node.remove(n)


def deterministic(fp32: Path, dst: Path, keep_fp32: list[str], max_tokens: int) -> Path:
    """The candidate scheme with the same bits on x86 and ARM (see the module docstring), for
    windows of at most `max_tokens` (the runtime's window: build.WINDOW)."""
    import tempfile

    import numpy as np
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    graph = model.graph
    tables = {i.name: i for i in graph.initializer if i.name in ("word.weight", "position.weight")}
    graph.initializer.extend([
        numpy_helper.from_array(np.full((HIDDEN, 1), 1 / HIDDEN, np.float32), "det_mean"),
        numpy_helper.from_array(np.ones((max_tokens, 1), np.float32), "det_ones"),
        numpy_helper.from_array(np.array([max_tokens], np.int64), "det_max_tokens"),
        numpy_helper.from_array(np.zeros(1, np.int64), "det_zero"),
        numpy_helper.from_array(np.zeros(7, np.int64), "det_zeros7"),  # Pad: only the last axis
    ])  # fmt: skip
    nodes, fp32_nodes = [], []
    keys_padded = False  # the padding amounts are made once, at the first softmax
    for node in graph.node:
        p = node.name.replace("/", "_").strip("_") + "_det_"
        if node.op_type == "LayerNormalization":
            eps = next(a.f for a in node.attribute if a.name == "epsilon")
            graph.initializer.append(numpy_helper.from_array(np.array(eps, np.float32), p + "e"))
            nodes += _layer_norm(node, p, p + "e")
            fp32_nodes += [p + "mean", p + "var"]  # sums, not weights: never quantized
        elif node.op_type == "Softmax":
            if not keys_padded:
                nodes += _key_pads(node.input[0])
                keys_padded = True
            nodes += _softmax(node, p)
            fp32_nodes.append(p + "sum")
        elif node.op_type == "Gather" and node.input[0] in tables:
            new, inits = _row_int8_gather(node, tables[node.input[0]], p)
            graph.initializer.remove(tables[node.input[0]])
            graph.initializer.extend(inits)
            nodes += new
            fp32_nodes += [p + "q", p + "s"]
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    _merge_qkv(graph)
    _static_shapes(graph)
    gathers = [n.name for n in nodes if n.op_type == "Gather"]  # token type: 2 rows, stays fp32
    with tempfile.TemporaryDirectory(dir=dst.parent) as tmp:
        det = Path(tmp) / "det.fp32.onnx"
        onnx.save(model, str(det))
        exclude = unit_nodes(graph, keep_fp32) + fp32_nodes + gathers
        quantize_dynamic(det, dst, per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8, nodes_to_exclude=exclude,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
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
