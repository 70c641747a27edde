"""Quantization schemes of the fp32 build side by side: fidelity and the AVX2 saturation risk.

For each scheme on the fused graph (8-bit signed weights, 7-bit `reduce_range` weights, unsigned
weights, the shipped scheme: 7-bit with models/quant.py's QUANT["fp32"] units kept fp32, and that
scheme with static activation scales calibrated on dev rows 1000-1300 when --data is given, and
the deterministic candidate, models/deterministic.py): the
minimum and mean embedding cosine and the emotion top-1 agreement against the fp32 build over 300
texts, the file size, the share of weight pairs that can saturate x86 AVX2's u8 x s8 kernel
(vpmaddubsw adds two u8*s8 products into int16: |w1| + |w2| > 128 can exceed 32767 for large
activations; ARM's kernels do not saturate, so such pairs make x86 and arm64 disagree), and the
arm64 parity proxy: the minimum and mean cosine of each scheme to itself with last-bit
perturbations after every fp32 op (models/optimize.py `ulp_perturbed`; for the shipped model it
tracks the emulated arm64: min 0.9917 vs 0.9923, mean 0.99971 vs 0.99970).

    .venv/bin/python tests/bench/bench_requant.py [--data situations.csv]

Needs the build extra and the fp32 build models/.build/<name>.fp32.onnx.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from companion.model.encode import Encoder  # noqa: E402
from models import optimize  # noqa: E402
from models.graph import fuse  # noqa: E402
from models.quant import quantize, quantize_fused  # noqa: E402
from tests.bench.bench_graph import outputs, texts  # noqa: E402
from tests.bench.bench_model import session  # noqa: E402
from tests.bench.machine import cpu_line  # noqa: E402


def saturating_pairs(path: Path) -> float:
    """Share of int8 weight pairs along K (what vpmaddubsw adds) with |w1| + |w2| > 128."""
    import onnx
    from onnx import numpy_helper

    hits = total = 0
    for init in onnx.load(str(path)).graph.initializer:
        if init.data_type != onnx.TensorProto.INT8 or init.name.endswith("zero_point"):
            continue
        w = numpy_helper.to_array(init).astype(np.int32)
        if w.ndim != 2 or any(t in init.name for t in ("embed", "word", "position")):
            continue  # embedding tables are dequantized, never multiplied in int8
        k = w.shape[0] // 2 * 2
        s = np.abs(w[0:k:2]) + np.abs(w[1:k:2])
        hits, total = hits + int((s > 128).sum()), total + s.size
    return hits / max(total, 1)


def main() -> None:
    import onnxruntime as ort

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    print(cpu_line(), f"onnxruntime {ort.__version__}")
    encoder, batch = Encoder.load(None), texts(args.data)
    ref, ref_top = outputs(session(optimize.FP32_BUILD), encoder, batch)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        fused = fuse(optimize.FP32_BUILD, out / "fused.onnx")
        every_unit = optimize.dynamic_int8_all_units
        schemes = {
            "s8 8-bit (saturates on AVX2)": every_unit(fused, out / "s8.onnx", reduce_range=False),
            "s8 7-bit reduce_range": every_unit(fused, out / "rr.onnx", reduce_range=True),
            "u8 weights": every_unit(fused, out / "u8.onnx", reduce_range=False, unsigned=True),
            "shipped (7-bit + fp32 units)": optimize.SHIPPED,
            "deterministic (candidate)": quantize(optimize.FP32_BUILD, out / "det.onnx"),
        }  # fmt: skip
        if args.data:
            from models.quant_sweep import rows

            calib = [encoder.token_windows(t) for t in rows(args.data, "1000:1300")]
            quantize_fused(fused, out / "dyn.onnx")
            schemes["shipped, static scales"] = optimize.static_scales(
                out / "dyn.onnx", fused, calib, out / "static.onnx")
        for i, (name, path) in enumerate(schemes.items()):
            emb, top = outputs(session(path), encoder, batch)
            cos = (emb * ref).sum(1)
            ulp = optimize.ulp_perturbed(path, out / f"ulp{i}.onnx")
            proxy = (outputs(session(ulp), encoder, batch)[0] * emb).sum(1)
            print(f"{name:30s} {path.stat().st_size / 1e6:5.1f} MB; vs fp32 build over "
                  f"{len(batch)} texts: cosine min {cos.min():.4f}, mean {cos.mean():.4f}, "
                  f"top-1 agreement {np.mean(top == ref_top):.2%}; "
                  f"saturating weight pairs {saturating_pairs(path):.2%}; arm64 proxy "
                  f"cosine min {proxy.min():.4f}, mean {proxy.mean():.5f}")  # fmt: skip


if __name__ == "__main__":
    main()
