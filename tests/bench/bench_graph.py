"""Compare graph variants of the shipped model on this machine: latency at 15/40/128 tokens on
one thread (runs interleaved, so background load hits all alike), int8 vs fp32 speed-up, and
embedding fidelity against the fp32 twin over 300 texts.

    .venv/bin/python tests/bench/bench_graph.py [--data situations.csv] [--runs 40]

Needs the build extra (onnx; models/optimize.py makes the variants in a temporary directory).
Without --data the 300 texts are the shipped bank's sentences.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "models"), str(Path(__file__).resolve().parent)]

import optimize  # noqa: E402
from bench_model import latency_ms, session  # noqa: E402
from machine import cpu_line  # noqa: E402

from companion.model.encode import Encoder  # noqa: E402


def texts(data: Path | None) -> list[str]:
    if data:
        with data.open(newline="", encoding="utf-8") as f:
            return [r[1] for r in list(csv.reader(f))[1:301]]
    from companion.engine.stories import bundled_stories

    sentences = [s.strip() + "." for st in bundled_stories() for s in st.text.split(".")]
    return [s for s in sentences if len(s.split()) >= 5][:300]


def embeddings(sess, enc: Encoder, batch: list[str]) -> np.ndarray:
    out = []
    for text in batch:
        ids = enc.token_windows(text)
        emb, _ = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        v = emb.mean(0)
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    print(cpu_line())
    enc = Encoder.load()
    sample = texts(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        paths = optimize.variants(Path(tmp))
        sessions = {name: session(path) for name, path in paths.items()}
        for i, (name, path) in enumerate(paths.items()):
            ops = optimize.runtime_ops(path, Path(tmp) / f"rt{i}.onnx")
            shown = {k: v for k, v in sorted(ops.items()) if k in optimize.SHOWN}
            print(f"{name}: {path.stat().st_size / 1e6:.1f} MB, "
                  f"{sum(optimize.op_counts(path).values())} nodes in the file, "
                  f"{sum(ops.values())} as onnxruntime runs it {shown}")  # fmt: skip
        for tokens in (15, 40, 128):
            lat = latency_ms(sessions, tokens, args.runs)
            row = ", ".join(
                f"{n} {lat[f'{n}_ms_{tokens}tok']} ({lat[f'{n}_best_ms_{tokens}tok']}) ms"
                for n in sessions
            )
            print(f"{tokens} tokens, 1 thread, median (best): {row}")
            ms = {n: lat[f"{n}_ms_{tokens}tok"] for n in sessions}
            print(f"  speed-up: shipped int8 vs fp32 twin "
                  f"{ms['fp32 twin'] / ms['int8 (shipped)']:.2f}x, fused int8 vs fused fp32 "
                  f"{ms['fp32 fused'] / ms['int8 fused']:.2f}x")  # fmt: skip
        ref = embeddings(sessions["fp32 twin"], enc, sample)
        for name in [n for n in paths if n != "fp32 twin"]:
            cos = np.sum(ref * embeddings(sessions[name], enc, sample), axis=1)
            print(f"cosine to fp32 twin, {name}, {len(sample)} texts: "
                  f"mean {cos.mean():.4f}, min {cos.min():.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
