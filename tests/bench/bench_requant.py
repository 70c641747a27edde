"""Where does int8 fidelity go? The shipped int8 model against int8 rebuilds of its fp32 twin:
signed weights with `reduce_range` (7-bit, no u8s8 saturation on CPUs without VNNI) and unsigned
weights. Prints the minimum and mean embedding cosine against the fp32 twin over 300 texts.

    .venv/bin/python tests/bench/bench_requant.py [--data situations.csv]

Needs the build extra (onnx). A check of one hypothesis for the arm64 parity gap (issue 16) and
the low int8 fidelity on this host (issue 13): if saturation were the cause, reduce_range would
lift the minimum cosine close to 1.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "models"), str(Path(__file__).resolve().parent)]

import optimize  # noqa: E402
from bench_graph import embeddings, texts  # noqa: E402
from machine import cpu_line  # noqa: E402

from companion.model.encode import Encoder  # noqa: E402


def main() -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    print(cpu_line(), f"onnxruntime {ort.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        twin = optimize.fp32_twin(optimize.SHIPPED, out / "twin.onnx")
        variants = {"shipped int8 (s8 weights)": optimize.SHIPPED}
        for name, reduce, weight in (("int8 s8, reduce_range", True, QuantType.QInt8),
                                     ("int8 u8 weights", False, QuantType.QUInt8)):  # fmt: skip
            path = out / f"{len(variants)}.onnx"
            quantize_dynamic(twin, path, per_channel=True, reduce_range=reduce, weight_type=weight)
            variants[name] = path
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1

        def session(path: Path) -> ort.InferenceSession:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        encoder, batch = Encoder.load(None), texts(args.data)
        reference = embeddings(session(twin), encoder, batch)
        for name, path in variants.items():
            cosine = (embeddings(session(path), encoder, batch) * reference).sum(1)
            print(f"{name:28s} cosine vs fp32 twin over {len(batch)} texts: "
                  f"min {cosine.min():.4f}, mean {cosine.mean():.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
