"""Matching quality by cross-validation: how often the top-ranked story shares the participant's
emotion (P@1; P@5 for the top five), with each fold's model scoring only text it never trained on.

`companion model eval --matching` on the dev split is in-sample (the shipped model trained on
those rows), so it flatters. Here every fold model that `models/calibrate_ack.py` trains (on the
other folds, the shipped training config, quantized by the shipped scheme) encodes its held-out
rows, windows pooled as at run time, and each of them is matched against the other held-out rows
of that fold as an untagged bank (about 920 stories). Printed per rule: the P@1 of each fold, the
mean, and P@5; then the weights a fold would choose from the other folds (nested CV), so the
winning rule is not judged on the rows it was picked on.

    .venv/bin/python models/calibrate_ack.py --data situations.csv   # trains the fold models once
    .venv/bin/python tests/bench/bench_matching.py --data situations.csv [--scratch models/.build]
        [--fold-models 'DIR/cand-fold{k}.fp32.onnx']   # a candidate config's fold models instead

Needs the build extra (the fold models are quantized by models/build.py when not cached).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from companion.model.encode import Encoder, disabled_optimizers, read_emotion_csv
from companion.model.evaluate import precision_at
from companion.model.similarity import emotion_similarity

REPO = Path(__file__).resolve().parents[2]

WEIGHTS = (0.2, 0.4, 0.6, 0.8, 1.0)  # the emotion weight; semantic = 1 - it
METRICS = ("agreement", "bhattacharyya")


def fold_encodings(data: Path, scratch: Path, folds: int,
                   template: str | None = None) -> list[dict[str, np.ndarray]]:  # fmt: skip
    """Per fold: its held-out rows' embeddings, emotion probabilities and labels. `template`
    (with {k}) names fp32 fold models trained on the same folds by another config
    (`calibrate_ack.py --fold K --fold-out PATH --config JSON`)."""
    import onnxruntime as ort

    from models import build, quant
    from models.calibrate_ack import cache_keys

    enc = Encoder.load()
    sidecar = enc.meta
    labels, texts = read_emotion_csv(data)
    y = np.asarray(labels)
    cfg = sidecar["training"]["config"]
    train_key, quant_key = cache_keys(data, json.dumps(cfg, sort_keys=True), folds, quant.QUANT)
    fold_of = build.stratified_folds(np.asarray(build.load_rows(data)[1]), folds, cfg["seed"])
    out = []
    for k in range(folds):
        fp32 = scratch / f"ack-oof-{train_key}-fold{k}.fp32.onnx"
        int8 = scratch / f"ack-oof-{train_key}-q{quant_key}-fold{k}.onnx"
        if template:
            fp32 = Path(template.format(k=k))
            int8 = fp32.with_name(fp32.name.replace(".fp32.onnx", f".q{quant_key}.onnx"))
        if not fp32.exists():
            sys.exit(f"{fp32} is missing: run models/calibrate_ack.py --data {data} "
                     f"--folds {folds} --scratch {scratch} first")  # fmt: skip
        if not int8.exists():
            quant.quantize(fp32, int8)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(int8), opts, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=disabled_optimizers(sidecar))  # fmt: skip
        rows = np.flatnonzero(fold_of == k)
        emb, probs = [], []
        for i in rows:
            ids = enc.token_windows(texts[i])
            e, z = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
            v = e.mean(0, dtype=np.float64)  # pooled as Encoder.encode pools
            emb.append(v / np.linalg.norm(v))
            z = z.mean(0, dtype=np.float64)
            p = np.exp(z - z.max())
            probs.append(p / p.sum())
        out.append({"emb": np.asarray(emb, np.float32), "probs": np.asarray(probs, np.float32),
                    "y": y[rows]})  # fmt: skip
        print(f"fold {k + 1} of {folds}: {len(rows)} held-out rows encoded by {int8.name}")
    return out


def p_at(fold: dict[str, np.ndarray], emotion: float, metric: str) -> dict[str, float]:
    emb, probs = fold["emb"], fold["probs"]
    cosine = emb @ emb.T
    emo = np.stack([emotion_similarity(p, probs, metric) for p in probs])  # type: ignore[arg-type]
    return precision_at((1 - emotion) * cosine + emotion * emo, fold["y"], (1, 5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="EmpatheticDialogues situations CSV")
    ap.add_argument("--scratch", type=Path, default=REPO / "models" / ".build")
    ap.add_argument("--folds", type=int, default=3, help="calibrate_ack.py's folds")
    ap.add_argument("--fold-models", help="fp32 fold models of another config, {k} = fold")
    args = ap.parse_args()
    folds = fold_encodings(args.data, args.scratch, args.folds, args.fold_models)
    allp = np.concatenate([f["probs"] for f in folds])
    ally = np.concatenate([f["y"] for f in folds])
    order = np.argsort(-allp, 1)
    print(f"out-of-fold emotion top-1 {np.mean(order[:, 0] == ally):.4f}, "
          f"top-3 {np.mean((order[:, :3] == ally[:, None]).any(1)):.4f}")  # fmt: skip
    table: dict[tuple[str, float], list[float]] = {}
    for metric in METRICS:
        for w in WEIGHTS:
            res = [p_at(f, w, metric) for f in folds]
            table[(metric, w)] = [r["p_at_1"] for r in res]
            p1 = " ".join(f"{r['p_at_1']:.3f}" for r in res)
            print(f"{metric:13s} semantic {1 - w:.1f} emotion {w:.1f}: P@1 per fold {p1}, "
                  f"mean {np.mean(table[(metric, w)]):.4f}; "
                  f"P@5 {np.mean([r['p_at_5'] for r in res]):.4f}")  # fmt: skip
    cosine = [p_at(f, 0.0, "agreement")["p_at_1"] for f in folds]
    print(f"pure cosine: P@1 mean {np.mean(cosine):.4f}")
    for metric in METRICS:  # nested: each fold judged by the weights the other folds choose
        held = []
        for k in range(len(folds)):
            best = max(WEIGHTS, key=lambda w: np.mean(
                [p for j, p in enumerate(table[(metric, w)]) if j != k]))  # fmt: skip
            held.append(table[(metric, best)][k])
            print(f"{metric}: fold {k + 1} judged with emotion {best} (chosen on the others): "
                  f"P@1 {held[-1]:.3f}")  # fmt: skip
        print(f"{metric}: nested-CV P@1 {np.mean(held):.4f}")


if __name__ == "__main__":
    main()
