"""The quantization layer of models/: how the fp32 export becomes the shipped int8 model (build-time
only: onnx, onnxruntime.quantization).

- QUANT: the scheme, recorded in the model's sidecar.
- `quantize`: the int8 model from an fp32 export by that scheme (models/deterministic.py).
- `quantize_fused`: the previous scheme (fused graph, dynamic int8), which the sensitivity sweep
  (models/quant_sweep.py) and the benchmarks compare.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from models.deterministic import deterministic
from models.graph import WINDOW, unit_nodes

# One definition, used by the build, the cross-validation and the acknowledgement calibration.
# The graph is rebuilt so that x86 and ARM compute the same bits (models/deterministic.py,
# issue 16): every fp32 sum whose result differs between the CPUs (layer norm, softmax) becomes
# a MatMul with a constant vector plus elementwise ops, query/key/value are one MatMul, and the
# word/position tables are int8 per row. reduce_range (7-bit weights): x86 AVX2 without VNNI
# multiplies u8 activations by s8 weights with vpmaddubsw, whose int16 pair sums saturate at
# 2*255*127; with |w| <= 64 they cannot (2*255*64 < 32767), so x86 and ARM compute the same
# integers. "fp32" lists the units kept unquantized, chosen by models/quant_sweep.py (rows
# 1000-1300 of the dev split; reported on rows 0-300). "session" is what the runtime must set:
# onnxruntime's MatMulIntegerToFloat fusion makes kernels whose results differ by CPU, and its
# MatMulScale fusion would fold the attention's constant scale into the scores' MatMul (other
# rounding than the Div the model was calibrated and checked with).
QUANT: dict[str, Any] = {
    "method": "onnxruntime dynamic",
    "graph": (
        "deterministic: layer norm and softmax sums as MatMul (keys padded to the window), "
        "q/k/v merged, constant head shapes, int8 tables"
    ),
    "weight_type": "QInt8",
    "reduce_range": True,
    "per_channel": True,
    "fp32": ["layers.2.out"],
    "session": {"disabled_optimizers": ["MatMulIntegerToFloatFusion", "MatMulScaleFusion"]},
}


def quantize(fp32: Path, out: Path, keep_fp32: list[str] | None = None) -> Path:
    """The int8 model from an fp32 export, by the scheme QUANT describes (`keep_fp32` overrides
    QUANT["fp32"], for the sensitivity sweep); returns `out`."""
    return deterministic(fp32, out, QUANT["fp32"] if keep_fp32 is None else keep_fp32, WINDOW)


def quantize_fused(fused: Path, out: Path, keep_fp32: list[str] | None = None) -> None:
    """The previous scheme (fused graph, dynamic int8) after the fusion step: the sensitivity
    sweep and the benchmarks compare it; `quantize` is what ships."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    units = QUANT["fp32"] if keep_fp32 is None else keep_fp32
    exclude = unit_nodes(onnx.load(str(fused)).graph, units)
    quantize_dynamic(fused, out, per_channel=QUANT["per_channel"],
                     reduce_range=QUANT["reduce_range"], weight_type=QuantType.QInt8,
                     nodes_to_exclude=exclude,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
