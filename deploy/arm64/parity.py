"""Model parity between two machines (arm64 vs x86) on the same inputs.

    python parity.py encode --csv situations_dev.csv [--n 300] [--bank-step K] --out arm64.npz
    python parity.py compare x86.npz arm64.npz [--min-agreement 0.99] [--min-cosine 0.985]

`encode` runs the installed companion's encoder over the first N texts of an emotion CSV
(`label,content`), all in one process (emulation pays the model load once). For each of the first
50 texts it picks the best empathic match from the whole bank with the bank encodings shipped in
the package (computed on x86), as a device does. With --bank-step K it also encodes every K-th
story afresh on this machine and records whether re-encoding would change that choice (off by
default: a device uses the shipped encodings, and long stories are the slowest part emulated).
`trace` runs a graph with every tensor exposed (models/optimize.py `exposed`, made on the host:
the device has no `onnx`) on a few rows and keeps every tensor; `trace-compare` lists, in graph
order, the tensors that differ between two machines' traces (how the x86/arm64 divergence was
found: models/README.md):

    python parity.py trace --model exposed.onnx --csv situations_dev.csv --rows 254,218 --out t.npz
    python parity.py trace-compare x86-trace.npz arm64-trace.npz

`compare` prints the parity numbers as one JSON line, says which of issue 16's goals are met
(agreement >= 0.995, minimum cosine >= 0.999, every story choice the same), and exits 1 if the
numbers fall below the regression guard (the options; defaults below the goals, see GOALS).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np

N_CHOICES = 50  # queries whose story choice is compared


def encode(csv_path: str, n: int, out: str, bank_step: int = 0) -> None:
    from companion.engine.stories import bundled_stories, content_hash
    from companion.model.empathy import bank_cache_path, story_emotions
    from companion.model.encode import Encoder, read_emotion_csv
    from companion.model.similarity import ScoreWeights, score

    _, texts = read_emotion_csv(Path(csv_path))
    texts = texts[:n]
    if len(texts) < n:
        sys.exit(f"parity: {csv_path} has {len(texts)} texts, fewer than --n {n}")
    encoder = Encoder.load()
    enc = encoder.encode_many(texts)
    stories = bundled_stories()
    fixed = list(range(0, len(stories), bank_step)) if bank_step > 0 else []
    fresh = encoder.encode_many([f"{stories[k].title}. {stories[k].text}" for k in fixed])
    with np.load(bank_cache_path(encoder.version)) as shipped:
        by_id = {str(i): k for k, i in enumerate(shipped["ids"])}
        idx = [by_id[s.id] for s in stories]
        if [str(shipped["hashes"][k]) for k in idx] != [content_hash(s.text) for s in stories]:
            sys.exit("parity: the shipped bank encodings do not match the bundled stories")
        ship_emb, ship_emo = shipped["embeddings"][idx], shipped["emotions"][idx]
    dim = ship_emb.shape[1]
    fresh_emb = np.stack([e.embedding for e in fresh]) if fresh else np.zeros((0, dim), np.float32)
    fresh_emo = np.stack([e.emotions for e in fresh]) if fresh else ship_emo[:0]
    weights = ScoreWeights()  # the default protocol's [matching] weights

    def choices(which: list[int], bank_emb: np.ndarray, bank_emo: np.ndarray) -> list[str]:
        if not which:
            return []
        subset = [stories[k] for k in which]
        emo = np.stack([story_emotions(s, p) for s, p in zip(subset, bank_emo, strict=True)])
        return [
            subset[int(np.argmax(score(q, bank_emb, emo, weights).total))].id
            for q in enc[:N_CHOICES]
        ]

    everything = list(range(len(stories)))

    np.savez_compressed(
        out,
        machine=np.array(platform.machine()),
        embeddings=np.stack([e.embedding for e in enc]),
        emotions=np.stack([e.emotions for e in enc]),
        bank_fresh=fresh_emb,
        choice_shipped=np.array(choices(everything, ship_emb, ship_emo)),
        choice_fixed_shipped=np.array(choices(fixed, ship_emb[fixed], ship_emo[fixed])),
        choice_fixed_fresh=np.array(choices(fixed, fresh_emb, fresh_emo)),
    )
    print(f"parity: encoded {len(texts)} texts and {len(fixed)} stories on {platform.machine()}")


def trace(model: str, csv_path: str, rows: list[int], out: str) -> None:
    import onnxruntime as ort

    from companion.model.encode import Encoder, read_emotion_csv

    _, texts = read_emotion_csv(Path(csv_path))
    encoder = Encoder.load()  # the runtime's tokenizer and windows
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    kept: dict[str, np.ndarray] = {}
    for row in rows:
        ids = encoder.token_windows(texts[row])
        values = sess.run(names, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        kept.update({f"{row}|{name}": v for name, v in zip(names, values, strict=True)})
    np.savez_compressed(out, machine=np.array(platform.machine()), names=np.array(names),
                        rows=np.array(rows), **kept)  # fmt: skip
    print(f"parity: traced {len(names)} tensors of {len(rows)} rows on {platform.machine()}")


def compare_traces(a, b) -> list[dict]:
    """Per row, the tensors (graph order) whose values differ between traces `a` and `b`:
    float tensors with their largest difference relative to the tensor's largest magnitude,
    integer (quantized) tensors with the count of elements that differ."""
    found = []
    for row in a["rows"]:
        for name in a["names"]:
            x, y = a[f"{row}|{name}"], b[f"{row}|{name}"]
            if x.dtype.kind in "iub":
                differ = int(np.count_nonzero(x != y))
                if differ:
                    found.append({"row": int(row), "tensor": str(name), "differ": differ,
                                  "of": int(x.size)})  # fmt: skip
            elif x.size and not np.array_equal(x, y):
                rel = float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(x))), 1e-30))
                found.append({"row": int(row), "tensor": str(name), "rel": rel})
    return found


# Issue 16's parity goals, reported on every run. The failing thresholds (`compare`'s options)
# are a regression guard set below them: the CPUs' fp32 kernels differ in the last bit, one u8
# activation then rounds the other way and later requantizations spread it (traced with `trace`:
# models/README.md), so one text's embedding moves (min cosine 0.992 here with the 7-bit model;
# the 8-bit one that saturated on AVX2 gave 0.972 and 97.67 % agreement, which the guard refuses).
# Another x86 CPU must not turn CI red.
GOALS = {"emotion_top1_agreement": 0.995, "embedding_cosine_min": 0.999,
         "story_choice_same_as_first": 1.0}  # fmt: skip


def compare(
    a_path: str, b_path: str, min_agreement: float, min_cosine: float, min_story: float = 1.0
) -> int:
    with np.load(a_path) as a, np.load(b_path) as b:
        if a["embeddings"].shape != b["embeddings"].shape:
            print(f"parity: {a_path} and {b_path} encode different numbers of texts")
            return 2
        cos = np.sum(a["embeddings"] * b["embeddings"], axis=1)
        agree = float(np.mean(a["emotions"].argmax(1) == b["emotions"].argmax(1)))
        bank_cos = np.sum(a["bank_fresh"] * b["bank_fresh"], axis=1)  # empty: not re-encoded
        reencoded = b["choice_fixed_shipped"].size > 0
        # The device uses the shipped (x86) bank encodings: its choice must equal x86's.
        same_shipped = float(np.mean(a["choice_shipped"] == b["choice_shipped"]))
        # Shipped vs re-encoded on the device (fixed stories): would re-encoding change a choice?
        fixed_same = b["choice_fixed_shipped"] == b["choice_fixed_fresh"]
        same_reencoded = float(np.mean(fixed_same)) if reencoded else 1.0
        result = {
            "machines": [str(a["machine"]), str(b["machine"])],
            "n": int(cos.size),
            "emotion_top1_agreement": round(agree, 4),
            "embedding_cosine_min": round(float(cos.min()), 6),
            "embedding_cosine_mean": round(float(cos.mean()), 6),
            "bank_cosine_min": round(float(bank_cos.min()), 6) if bank_cos.size else None,
            "story_choice_same_as_first": round(same_shipped, 4),
            "story_choice_shipped_vs_reencoded": round(same_reencoded, 4) if reencoded else None,
            "choices": int(a["choice_shipped"].size),
        }
    result["goals_met"] = {k: bool(result[k] >= v) for k, v in GOALS.items()}
    print(json.dumps(result))
    for key, met in result["goals_met"].items():
        print(f"parity: goal {key} >= {GOALS[key]}: {'met' if met else 'NOT MET'} ({result[key]})")
    failed = [
        name
        for name, ok in (
            (f"emotion agreement {agree:.4f} < {min_agreement}", agree >= min_agreement),
            (f"embedding cosine {cos.min():.6f} < {min_cosine}", cos.min() >= min_cosine),
            (f"story choice differs on {1 - same_shipped:.0%} of queries",
             same_shipped >= min_story),
            (f"re-encoding the bank changes {1 - same_reencoded:.0%}", same_reencoded == 1.0),
        )
        if not ok
    ]
    for reason in failed:
        print(f"parity: FAIL: {reason}")
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--csv", required=True)
    e.add_argument("--n", type=int, default=300)
    e.add_argument("--bank-step", type=int, default=0)
    e.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--min-agreement", type=float, default=0.99, help="guard (goal: 0.995)")
    c.add_argument("--min-cosine", type=float, default=0.985, help="guard (goal: 0.999)")
    c.add_argument("--min-story", type=float, default=0.96, help="guard (goal: 1.0)")
    t = sub.add_parser("trace")
    t.add_argument("--model", required=True, help="a graph from models/optimize.py exposed()")
    t.add_argument("--csv", required=True)
    t.add_argument("--rows", required=True, help="comma-separated row indices of the CSV")
    t.add_argument("--out", required=True)
    tc = sub.add_parser("trace-compare")
    tc.add_argument("a")
    tc.add_argument("b")
    args = p.parse_args()
    if args.cmd == "trace":
        trace(args.model, args.csv, [int(r) for r in args.rows.split(",")], args.out)
        return 0
    if args.cmd == "trace-compare":
        with np.load(args.a) as a, np.load(args.b) as b:
            for d in compare_traces(a, b):
                size = f"{d['rel']:.3g} relative" if "rel" in d else f"{d['differ']}/{d['of']}"
                print(f"row {d['row']}: {d['tensor']}: {size}")
        return 0
    if args.cmd == "encode":
        encode(args.csv, args.n, args.out, args.bank_step)
        return 0
    return compare(args.a, args.b, args.min_agreement, args.min_cosine, args.min_story)


if __name__ == "__main__":
    sys.exit(main())
