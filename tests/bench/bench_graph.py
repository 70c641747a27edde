"""Compare graph variants of the shipped model on this machine: latency at 15/40/128 tokens on
one thread (runs interleaved, so background load hits all alike), int8 vs fp32 speed-up, and
fidelity to the fp32 build (embedding cosine, emotion top-1 agreement) over 300 texts.

    .venv/bin/python tests/bench/bench_graph.py [--data situations.csv] [--runs 40]
        [--previous OLD.onnx]   # an earlier build (its sidecar beside it), timed in the same runs

An earlier build from git: `git show REV:models/companion-empathy-1.onnx > /tmp/old.onnx` and
the same for its `.onnx.json` to `/tmp/old.onnx.json`.

Needs the build extra and the fp32 build models/.build/<name>.fp32.onnx (written by
models/build.py; models/optimize.py makes the other variants in a temporary directory).
Without --data the 300 texts are the shipped bank's sentences.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from companion.model.encode import Encoder  # noqa: E402
from models import optimize  # noqa: E402
from tests.bench.bench_model import latency_ms, session  # noqa: E402
from tests.bench.machine import cpu_line  # noqa: E402


def texts(data: Path | None) -> list[str]:
    if data:
        with data.open(newline="", encoding="utf-8") as f:
            return [r[1] for r in list(csv.reader(f))[1:301]]
    from companion.engine.stories import bundled_stories

    sentences = [s.strip() + "." for st in bundled_stories() for s in st.text.split(".")]
    return [s for s in sentences if len(s.split()) >= 5][:300]


def outputs(sess, enc: Encoder, batch: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per text, as the runtime pools windows: the embedding and the top emotion."""
    embs, tops = [], []
    for text in batch:
        ids = enc.token_windows(text)
        emb, logits = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        v = emb.mean(0)
        embs.append(v / np.linalg.norm(v))
        tops.append(int(logits.mean(0).argmax()))
    return np.stack(embs), np.asarray(tops)


def embeddings(sess, enc: Encoder, batch: list[str]) -> np.ndarray:
    return outputs(sess, enc, batch)[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--previous", type=Path, default=None, help="an earlier int8 build")
    args = parser.parse_args()
    print(cpu_line())
    enc = Encoder.load()
    sample = texts(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        paths = optimize.variants(Path(tmp))
        if args.previous:
            paths["previous build"] = args.previous
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
            shipped = ms["int8 (shipped)"]
            print(f"  speed-up of the shipped int8: {ms['fp32 build'] / shipped:.2f}x the fp32 "
                  f"build, {ms['fp32 fused'] / shipped:.2f}x the fused fp32 build")  # fmt: skip
            if args.previous:
                gain = ms["previous build"] / shipped
                print(f"  the shipped int8 vs the previous build: {gain:.2f}x")
        ref, ref_top = outputs(sessions["fp32 build"], enc, sample)
        for name in [n for n in paths if n != "fp32 build"]:
            emb, top = outputs(sessions[name], enc, sample)
            cos = np.sum(ref * emb, axis=1)
            agree = np.mean(top == ref_top)
            print(f"vs fp32 build, {name}, {len(sample)} texts: cosine mean {cos.mean():.4f}, "
                  f"min {cos.min():.4f}; emotion top-1 agreement {agree:.2%}")  # fmt: skip


if __name__ == "__main__":
    main()
