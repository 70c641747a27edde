"""Build-time only (onnx, onnxruntime): `deterministic`, the int8 scheme of the shipped model,
with the same bits on x86 and ARM (issue 16): the unfused fp32 build with LayerNormalization and
Softmax rebuilt from ops that onnxruntime computes identically on both (sums as MatMul with a
constant vector, elementwise ops, Exp, Sqrt, ReduceMax), query/key/value merged, per-row int8
embedding tables dequantized after the gather, then the dynamic int8 scheme of models/quant.py
QUANT (its fp32 units kept). Run it with onnxruntime's MatMulIntegerToFloatFusion disabled: the
kernels that fusion makes differ. models/quant.py `quantize` calls it with QUANT's units.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from models.graph import HEADS, HIDDEN, unit_nodes


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
        numpy_helper.from_array(np.asarray(np.float32(head) ** np.float32(0.5)), "det_head_scale"),
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
    windows of at most `max_tokens` (the runtime's window: models/graph.py WINDOW)."""
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
