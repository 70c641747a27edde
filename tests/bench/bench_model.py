"""Benchmark the on-device model: fp32 vs int8 latency, fidelity, size, matching, memory.

    .venv/bin/python tests/bench/bench_model.py [--data situations.csv] [--record]
        [--previous OLD.onnx]   # an earlier build (its sidecar beside it), timed interleaved

fp32 numbers need the build scratch models/.build/<name>.fp32.onnx (from models/build.py).
--record writes the numbers into the sidecar's metrics.benchmark (the model file is unchanged).
fp32 is the unfused fp32 build the int8 model was quantized from.
Goals: int8 >= 1.5x faster than fp32, cosine >= 0.98, <= 12 ms at 40 tokens, matching <= 5 ms
for 10,000 stories, RSS <= 150 MB.
"""

from __future__ import annotations

import os

# One thread everywhere (Pi-class target); must be set before numpy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from companion.model.encode import Encoder, disabled_optimizers  # noqa: E402
from companion.model.similarity import ScoreWeights, rank  # noqa: E402
from tests.bench.machine import cpu_line  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

SAMPLE = [
    "I was so nervous before my job interview that my hands were shaking.",
    "My sister came home after two years abroad and we hugged for ages.",
    "Someone stole my bike from outside the library and I was furious.",
    "I still think about the summers at my grandparents' farm.",
    "I forgot my best friend's birthday and felt terrible about it.",
]


def session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sidecar = path.with_name(path.name + ".json")  # the fp32 build has none
    meta = json.loads(sidecar.read_text()) if sidecar.exists() else {}
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"],
                                disabled_optimizers=disabled_optimizers(meta))  # fmt: skip


def latency_ms(sessions: dict[str, ort.InferenceSession], tokens: int, runs: int) -> dict:
    """Median and best milliseconds per session, runs interleaved so load hits all alike."""
    ids = np.full((1, tokens), 2154, np.int64)  # a common word piece, repeated
    ids[0, 0], ids[0, -1] = 101, 102
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for i in range(runs + 5):
        for name, sess in sessions.items():
            t = time.perf_counter()
            sess.run(None, feeds)
            if i >= 5:  # warm-up
                times[name].append((time.perf_counter() - t) * 1000)
    out = {}
    for name, ts in times.items():
        out[f"{name}_ms_{tokens}tok"] = round(statistics.median(ts), 2)
        out[f"{name}_best_ms_{tokens}tok"] = round(min(ts), 2)
    return out


def rss_mb() -> float:
    code = (
        "from companion.model.encode import Encoder\n"
        "e = Encoder.load(); e.encode('hello there, how was your day?')\n"
        "s = open('/proc/self/status').read().split('\\n')\n"
        "print([l.split()[1] for l in s if l.startswith('VmHWM')][0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(int(out.stdout.strip()) / 1024, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, help="CSV (label,content) for the fp32/int8 cosine")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--record", action="store_true", help="write numbers into the sidecar")
    ap.add_argument("--previous", type=Path, help="an earlier int8 build, timed in the same runs")
    args = ap.parse_args()

    enc = Encoder.load()
    model = REPO / "models" / enc.meta["file"]
    fp32_path = REPO / "models" / ".build" / (model.stem + ".fp32.onnx")
    int8 = session(model)
    fp32 = session(fp32_path) if fp32_path.exists() else None
    res: dict = {"file_mb": round(model.stat().st_size / 1e6, 2), "threads": 1,
                 "cpu": cpu_line()}  # fmt: skip
    print(res["cpu"])
    res["load_avg_1min"] = os.getloadavg()[0]
    sessions = {"int8": int8} if fp32 is None else {"int8": int8, "fp32": fp32}
    if args.previous:
        sessions["previous"] = session(args.previous)
    for n in (15, 40, 128):
        res.update(latency_ms(sessions, n, args.runs))
        if fp32 is not None:
            res[f"speedup_{n}tok"] = round(res[f"fp32_ms_{n}tok"] / res[f"int8_ms_{n}tok"], 2)
            best = res[f"fp32_best_ms_{n}tok"] / res[f"int8_best_ms_{n}tok"]
            res[f"speedup_best_{n}tok"] = round(best, 2)
    if fp32 is not None:
        texts = SAMPLE
        if args.data:
            with args.data.open(newline="", encoding="utf-8") as f:
                texts = [r["content"] for r in csv.DictReader(f)][:300]
        cos = []
        for t in texts:
            ids = enc.token_windows(t)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            a, b = int8.run(["embedding"], feeds)[0][0], fp32.run(["embedding"], feeds)[0][0]
            cos.append(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
        res["cosine_fp32_int8_mean"] = round(float(np.mean(cos)), 4)
        res["cosine_fp32_int8_min"] = round(float(np.min(cos)), 4)
        res["cosine_texts"] = len(cos)
    t = time.perf_counter()
    encs = enc.encode_many(SAMPLE * 4)
    res["encode_ms_per_sample_text"] = round((time.perf_counter() - t) * 1000 / len(encs), 2)

    rng = np.random.default_rng(0)
    bank = rng.standard_normal((10_000, 384)).astype(np.float32)
    bank /= np.linalg.norm(bank, axis=1, keepdims=True)
    emo = rng.dirichlet(np.full(32, 0.3), size=10_000).astype(np.float32)
    mask = rng.random(10_000) < 0.05
    times = []
    for i in range(100):
        t = time.perf_counter()
        rank(encs[i % len(encs)], bank, emo, ScoreWeights(), exclude_mask=mask, top_k=10)
        times.append((time.perf_counter() - t) * 1000)
    res["match_ms_10k"] = round(statistics.median(times), 2)
    res["match_best_ms_10k"] = round(min(times), 2)
    res["rss_mb"] = rss_mb()
    print(json.dumps(res, indent=2))
    if args.record:
        side = model.with_name(model.name + ".json")
        meta = json.loads(side.read_text())
        meta.setdefault("metrics", {})["benchmark"] = res
        side.write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
