"""Calibrate the acknowledgement naming rule for the shipped model (build-time; needs `build`).

    .venv/bin/python models/calibrate_ack.py \
        --data ../shared/data/empatheticdialogues/situations_dev.csv

The shipped model is trained on every row of that file, so its own probabilities on it are
in-sample (top-1 0.90 against 0.52 held out) and would make any rule look reliable. The rule is
therefore calibrated on out-of-fold probabilities: the model's build config is retrained on k-1
folds, exported to fp32 ONNX, quantized by `build.quantize` (the scheme `build.QUANT` names, as
the shipped model is) and the held-out fold scored, as `build.py`'s cross-validation does. The
training is 20-60 minutes on 2 cores; its fp32 exports are kept in --scratch (keyed by the data,
the config and the folds), so a new quantization scheme only re-quantizes and re-scores them
(minutes), and the out-of-fold probabilities are cached keyed by the scheme as well (a rerun
for the same model is seconds). The rule's four pooled thresholds (exact, family, valence,
late family; `companion.engine.ackfit`) are then fitted, and the fitting (an inner CV choosing
how strict to be on the fitting rows, then the thresholds) measured by an outer k-fold
cross-validation on those probabilities (printed per fold); the final rule, fitted on all rows,
is written to companion/data/acknowledge_rule.json with the model sha256 it belongs to. Rerun
after any model rebuild: the tests fail while the rule belongs to another model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from companion.emotions import EMOTIONS  # noqa: E402

log = logging.getLogger("calibrate_ack")
RULE_PATH = HERE.parent / "companion" / "data" / "acknowledge_rule.json"


def cache_keys(data: Path, cfg_json: str, folds: int, quant: dict) -> tuple[str, str]:
    """(training key, quantization key): the fold models depend on the data, the config and the
    folds; their int8 logits also on the quantization scheme (`build.QUANT`)."""
    train = hashlib.sha256(data.read_bytes() + cfg_json.encode() + str(folds).encode()).hexdigest()
    quant_json = json.dumps(quant, sort_keys=True)
    return train[:16], hashlib.sha256((train + quant_json).encode()).hexdigest()[:8]


def oof_probabilities(
    data: Path, sidecar: dict, folds: int, jobs: int, scratch: Path
) -> np.ndarray:
    """Out-of-fold emotion probabilities (rows in file order) for the shipped model's config,
    quantized as the shipped model is (`build.QUANT`)."""
    import build

    cfg_json = json.dumps(sidecar["training"]["config"], sort_keys=True)
    train_key, quant_key = cache_keys(data, cfg_json, folds, build.QUANT)
    fp32 = [scratch / f"ack-oof-{train_key}-fold{k}.fp32.onnx" for k in range(folds)]
    stem = scratch / f"ack-oof-{train_key}-q{quant_key}"
    cache = stem.with_suffix(".npz")
    if cache.exists():
        log.info("out-of-fold probabilities from %s", cache)
        return np.load(cache)["probs"]
    # A fold without its fp32 export trains in its own process (`--fold K`), `jobs` at a time.
    pending = [k for k in range(folds) if not fp32[k].exists()]
    running: list[subprocess.Popen] = []
    while pending or running:
        while pending and len(running) < jobs:
            k = pending.pop(0)
            cmd = [sys.executable, __file__, "--data", str(data), "--folds", str(folds),
                   "--scratch", str(scratch), "--fold", str(k), "--fold-out", str(fp32[k]),
                   "--config", cfg_json]  # fmt: skip
            running.append(subprocess.Popen(cmd))
        running[0].wait()
        if running[0].returncode:
            raise SystemExit(f"fold training failed: {running[0].args}")
        running.pop(0)
    # Each fold's fp32 export quantized by today's scheme and its held-out rows scored: seconds
    # to minutes, so a new quantization never means retraining.
    logits = np.zeros((len(build.load_rows(data)[1]), len(EMOTIONS)), np.float32)
    for k in range(folds):
        out = Path(f"{stem}-fold{k}.npy")
        if not out.exists():
            np.save(out, score_fold(data, cfg_json, folds, k, fp32[k], out.with_suffix(".onnx")))
            log.info("fold %d of %d quantized (%s) and scored: %s", k + 1, folds, build.QUANT, out)
        logits += np.load(out)
    z = logits - logits.max(1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    quant = json.dumps(build.QUANT, sort_keys=True)
    np.savez(cache, probs=probs, config=cfg_json, quant=quant, model=sidecar["sha256"])
    log.info("cached %s", cache)
    return probs


def fold_rows(data: Path, cfg_json: str, folds: int, k: int):
    """Token ids and labels of every row, and fold k's held-out and training row indices."""
    from build import load_rows, source_dir, tokenize
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(source_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    texts, labels = load_rows(data)
    fold_of = ackrule_folds(labels, folds, json.loads(cfg_json)["seed"])
    return tokenize(tok, texts), labels, np.flatnonzero(fold_of == k), np.flatnonzero(fold_of != k)


def score_fold(data: Path, cfg_json: str, folds: int, k: int, fp32: Path, int8: Path) -> np.ndarray:
    """Fold k's fp32 export quantized (`build.quantize`) to `int8`; its held-out rows' logits
    (zero elsewhere)."""
    from build import onnx_logits, quantize

    ids, _, test, _ = fold_rows(data, cfg_json, folds, k)
    quantize(fp32, int8)
    logits = np.zeros((len(ids), len(EMOTIONS)), np.float32)
    logits[test] = onnx_logits(int8, ids, test)
    return logits


def train_fold(data: Path, cfg_json: str, folds: int, k: int, out: Path) -> None:
    """Train the build config on every fold but `k`; write its fp32 ONNX export to `out`."""
    import torch
    from build import TrainConfig, export, load_pretrained, predict, seed_all, source_dir, train

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    cfg = TrainConfig(**json.loads(cfg_json))
    ids, labels, _, tr = fold_rows(data, cfg_json, folds, k)
    seed_all(cfg.seed)
    # The distillation teacher only for the training rows: a third of the work saved per fold.
    teacher = np.zeros((len(ids), 384), np.float32)
    teacher[tr], _ = predict(load_pretrained(source_dir(), len(EMOTIONS)), ids, tr)
    # export() writes <stem>.fp32.onnx (= out) beside an int8 <stem>.onnx; only the fp32 one is
    # used (score_fold quantizes it by the current scheme).
    model = train(ids, labels, tr, teacher, cfg)
    export(model, out.with_name(out.name.replace(".fp32.onnx", ".onnx")), out.parent)
    log.info("fold %d of %d trained: %s", k + 1, folds, out)


def build_quant() -> dict:
    import build

    return build.QUANT


def ackrule_folds(labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Stratified fold of each row: build.py's assignment, so the folds are its CV's."""
    from build import stratified_folds

    return stratified_folds(labels, folds, seed)


def main() -> None:
    from companion.engine import ackfit, ackrule
    from companion.model.encode import read_emotion_csv

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="EmpatheticDialogues situations CSV")
    ap.add_argument("--model", type=Path, default=HERE / "companion-empathy-1.onnx")
    ap.add_argument("--folds", type=int, default=3, help="folds of the out-of-fold models")
    ap.add_argument("--jobs", type=int, default=3, help="folds trained at once")
    ap.add_argument("--rule-folds", type=int, default=5, help="folds of the rule's own CV")
    ap.add_argument("--fold", type=int, help=argparse.SUPPRESS)  # internal: one fold's worker
    ap.add_argument("--fold-out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--precision", type=float, default=0.9, help="goal: right when named")
    ap.add_argument("--scratch", type=Path, default=HERE / ".build")
    ap.add_argument("--out", type=Path, default=RULE_PATH)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args.scratch.mkdir(parents=True, exist_ok=True)
    if args.fold is not None:
        train_fold(args.data, args.config, args.folds, args.fold, args.fold_out)
        return
    sidecar = json.loads(Path(f"{args.model}.json").read_text())
    probs = oof_probabilities(args.data, sidecar, args.folds, args.jobs, args.scratch)
    labels = [EMOTIONS[i] for i in read_emotion_csv(args.data)[0]]
    rows = ackfit.emotions_of(probs)
    # Outer CV of the whole fitting (training precision chosen by an inner CV, thresholds
    # fitted) on k-1 folds, scored on the held-out one.
    fold_of = ackrule_folds(np.asarray([EMOTIONS.index(x) for x in labels]), args.rule_folds, 7)
    held_out, rules, per_fold = ackfit.cross_validate(
        rows, labels, list(fold_of), lambda r, t: ackfit.calibrate(r, t, args.precision)
    )
    for k, (scores, rule) in enumerate(zip(per_fold, rules, strict=True)):
        cuts = {key: rule[key] for key in ("target", *ackrule.LEVELS, "family_late")}
        print(json.dumps({"fold": k + 1, **scores, "rule": cuts}))
    overall = ackrule.score(held_out, labels)
    print(json.dumps({"fold": "all", **overall}))
    final = ackfit.calibrate(rows, labels, args.precision)
    command = f"python models/calibrate_ack.py --data {args.data}"
    final.update(
        model_sha256=sidecar["sha256"],
        model=sidecar["file"],
        data=args.data.name,
        quantization=build_quant(),
        calibrated_on=f"out-of-fold probabilities, {args.folds}-fold",
        cross_validated={"folds": per_fold, "overall": overall},
        command=command,
    )
    args.out.write_text(json.dumps(final, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
