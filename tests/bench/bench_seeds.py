"""How much of a model change is training noise, and what an ensemble of the shipped config
would reach: out-of-fold emotion top-1/top-3 of the shipped training config under several seeds
(each seed draws its own stratified folds and its own training order), and of the seeds'
average (each row's probabilities come only from models that never trained on it).

    .venv/bin/python tests/bench/bench_seeds.py --data situations.csv --scratch DIR \
        [--seeds 1234 1235 1236] [--folds 3] [--jobs 2]

Missing fold models are trained by `models/calibrate_ack.py --fold K` (about 3 minutes a fold
on this machine, `--jobs` at a time) and kept in `--scratch`; the seed the shipped config names
reuses calibrate_ack's own cached fold models when the scratch directory is the same. Scored in
fp32 (the shipped int8 scheme moves top-1 by under 0.1 point, tests/bench/bench_matching.py).
Needs the build extra.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from companion.model.encode import Encoder, read_emotion_csv

REPO = Path(__file__).resolve().parents[2]


def fold_models(enc: Encoder, data: Path, scratch: Path, seed: int, folds: int,
                jobs: int) -> list[Path]:  # fmt: skip
    """The fp32 fold models of the shipped config under `seed`, trained where missing."""
    from models import quant
    from models.calibrate_ack import cache_keys

    cfg = {**enc.meta["training"]["config"], "seed": seed}
    cfg_json = json.dumps(cfg, sort_keys=True)
    key = cache_keys(data, cfg_json, folds, quant.QUANT)[0]
    paths = [scratch / f"ack-oof-{key}-fold{k}.fp32.onnx" for k in range(folds)]
    pending = [k for k, p in enumerate(paths) if not p.exists()]
    while pending:
        batch, pending = pending[:jobs], pending[jobs:]
        procs = [subprocess.Popen([sys.executable, str(REPO / "models" / "calibrate_ack.py"),
                                   "--data", str(data), "--folds", str(folds), "--scratch",
                                   str(scratch), "--fold", str(k), "--fold-out", str(paths[k]),
                                   "--config", cfg_json]) for k in batch]  # fmt: skip
        if any(p.wait() for p in procs):
            sys.exit(f"fold training failed for seed {seed}")
    return paths


def out_of_fold(enc: Encoder, data: Path, paths: list[Path], seed: int) -> np.ndarray:
    import onnxruntime as ort

    from models import build

    _, texts = read_emotion_csv(data)
    fold_of = build.stratified_folds(np.asarray(build.load_rows(data)[1]), len(paths), seed)
    probs = np.zeros((len(texts), 32))
    for k, path in enumerate(paths):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        for i in np.flatnonzero(fold_of == k):
            ids = enc.token_windows(texts[i])
            _, z = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
            z = z.mean(0, dtype=np.float64)  # windows pooled as Encoder.encode pools them
            p = np.exp(z - z.max())
            probs[i] = p / p.sum()
    return probs


def top(probs: np.ndarray, y: np.ndarray) -> str:
    order = np.argsort(-probs, 1)
    return (f"top-1 {np.mean(order[:, 0] == y):.4f}, "
            f"top-3 {np.mean((order[:, :3] == y[:, None]).any(1)):.4f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="EmpatheticDialogues situations CSV")
    ap.add_argument("--scratch", type=Path, default=REPO / "models" / ".build")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1234, 1235, 1236])
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2, help="fold models trained at once")
    args = ap.parse_args()
    y = np.asarray(read_emotion_csv(args.data)[0])
    runs, enc = [], Encoder.load()  # its tokenizer windows every text; its sidecar the config
    for seed in args.seeds:
        paths = fold_models(enc, args.data, args.scratch, seed, args.folds, args.jobs)
        runs.append(out_of_fold(enc, args.data, paths, seed))
        print(f"seed {seed}, {args.folds}-fold, out of fold: {top(runs[-1], y)}")
    singles = [float(np.mean(np.argmax(p, 1) == y)) for p in runs]
    print(f"single seeds: top-1 mean {np.mean(singles):.4f}, range "
          f"{min(singles):.4f}-{max(singles):.4f}")  # fmt: skip
    if len(runs) > 1:
        print(f"average of {len(runs)} seeds' probabilities: {top(np.mean(runs, 0), y)}")


if __name__ == "__main__":
    main()
