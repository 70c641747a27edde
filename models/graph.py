"""The bottom layer of models/: the shapes of the model's graph and the helpers on ONNX graphs
that the quantization and the tools share (build-time only: `fuse` needs onnxruntime's
transformer optimizer; the rest reads graphs given to it).

- HEADS, HIDDEN: MiniLM's attention heads and hidden width; WINDOW: tokens per encoder window
  ([CLS] and [SEP] included), the longest input the shipped graph takes.
- `all_units` / `unit_nodes`: the quantizable units (`layers.I.qkv` ...) and their graph nodes,
  fused or not, for QUANT["fp32"] (models/quant.py: the units kept in fp32).
- `fuse`: onnxruntime's transformer optimizer (model_type bert): Attention,
  SkipLayerNormalization, BiasGelu and EmbedLayerNormalization. Attention fuses because
  models/minilm.py builds the attention mask in the order the optimizer matches (Unsqueeze,
  Cast, Sub, Mul).
"""

from __future__ import annotations

import logging
from pathlib import Path

HEADS, HIDDEN = 12, 384
WINDOW = 128

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


def fuse(src: Path, dst: Path) -> Path:
    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.WARNING)
    opt = optimize_model(str(src), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                         opt_level=1, use_gpu=False)  # fmt: skip
    opt.save_model_to_file(str(dst))
    return dst
