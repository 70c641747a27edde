"""Build-time only (onnx, onnxruntime.transformers): the graph steps of the shipped model.

- `fuse`: onnxruntime's transformer optimizer (model_type bert): Attention, SkipLayerNormalization,
  BiasGelu and EmbedLayerNormalization. Attention fuses because models/minilm.py builds the
  attention mask in the order the optimizer matches (Unsqueeze, Cast, Sub, Mul).
- `unit_nodes`: the graph nodes of named units (`layers.I.qkv` ...), fused or not, for
  build.py's QUANT["fp32"] (the units kept in fp32).
- `variants`: graph and quantization variants of the fp32 build that tests/bench compares.

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
         "EmbedLayerNormalization", "QEmbedLayerNormalization")  # fmt: skip


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


def op_counts(path: Path) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node))


def variants(out: Path, fp32: Path = FP32_BUILD) -> dict[str, Path]:
    """The shipped int8 model beside the fp32 build it was quantized from and alternatives."""
    if not fp32.exists():
        raise SystemExit(f"{fp32} is missing: run models/build.py (--folds 0) to make it")
    sys.path.insert(0, str(REPO / "models"))
    from build import quantize_fused

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
