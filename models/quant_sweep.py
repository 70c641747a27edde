"""Choose which units of the model stay fp32 in the int8 build (QUANT["fp32"] in models/quant.py).

Build-time only. Sensitivity sweep on one set of dev rows, figures reported on another:

    .venv/bin/python models/quant_sweep.py --fp32 models/.build/companion-empathy-2.fp32.onnx \\
        --data ../shared/data/empatheticdialogues/situations_dev.csv

1. every unit (`layers.I.qkv|attn_out|inter|out`, `head`) kept fp32 alone, the rest quantized by
   QUANT's scheme: minimum embedding cosine to the fp32 build over the sweep rows;
2. units added greedily, most helpful first, while the file stays within --max-mb, until the
   sweep minimum reaches --target;
3. the chosen set measured on the report rows (minimum/mean cosine, emotion top-1 agreement).
The token embedding is never a candidate: in fp32 it alone is 47 MB.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from companion.model.encode import Encoder  # noqa: E402
from models.graph import all_units, fuse  # noqa: E402
from models.quant import QUANT, quantize_fused  # noqa: E402


def rows(data: Path, span: str) -> list[str]:
    start, stop = (int(x) for x in span.split(":"))
    with data.open(newline="", encoding="utf-8") as f:
        return [r["content"].strip() for r in csv.DictReader(f)][start:stop]


def outputs(path: Path, windows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per text: the runtime's pooled embedding (windows averaged) and its top emotion."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    embs, tops = [], []
    for ids in windows:
        emb, logits = sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        v = emb.mean(0)
        embs.append(v / np.linalg.norm(v))
        tops.append(int(logits.mean(0).argmax()))
    return np.stack(embs), np.asarray(tops)


def fidelity(path: Path, windows: list[np.ndarray], ref: tuple[np.ndarray, np.ndarray]) -> dict:
    emb, top = outputs(path, windows)
    cos = (emb * ref[0]).sum(1)
    return {"min_cos": round(float(cos.min()), 4), "mean_cos": round(float(cos.mean()), 5),
            "top1_agree": round(float((top == ref[1]).mean()), 4),
            "mb": round(path.stat().st_size / 1e6, 2)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--fp32", type=Path, required=True, help="fp32 export (build scratch)")
    ap.add_argument("--data", type=Path, required=True, help="EmpatheticDialogues situations CSV")
    ap.add_argument("--sweep", default="1000:1300", help="rows the choice is made on")
    ap.add_argument("--report", default="0:300", help="rows the choice is reported on")
    ap.add_argument("--target", type=float, default=0.985, help="sweep minimum cosine to reach")
    ap.add_argument("--max-mb", type=float, default=25.0)
    args = ap.parse_args()
    enc = Encoder.load()
    sweep = [enc.token_windows(t) for t in rows(args.data, args.sweep)]
    report = [enc.token_windows(t) for t in rows(args.data, args.report)]
    ref_sweep, ref_report = outputs(args.fp32, sweep), outputs(args.fp32, report)
    with tempfile.TemporaryDirectory() as tmp:
        fused = fuse(args.fp32, Path(tmp) / "fused.onnx")

        def measure(units: list[str], texts=sweep, ref=ref_sweep) -> dict:
            out = Path(tmp) / "q.onnx"
            quantize_fused(fused, out, units)
            return fidelity(out, texts, ref)

        base = measure([])
        print(json.dumps({"scheme": {k: v for k, v in QUANT.items() if k != "fp32"},
                          "all int8": base}))  # fmt: skip
        alone = {}
        for unit in all_units()[:-1]:  # not the embedding
            alone[unit] = measure([unit])
            print(json.dumps({"fp32 alone": unit, **alone[unit]}), flush=True)
        chosen: list[str] = []
        best = base
        for unit in sorted(alone, key=lambda u: -alone[u]["min_cos"]):
            if best["min_cos"] >= args.target:
                break
            trial = measure(chosen + [unit])
            if trial["mb"] <= args.max_mb and trial["min_cos"] > best["min_cos"]:
                chosen, best = chosen + [unit], trial
            print(json.dumps({"fp32": chosen, "tried": unit, **trial}), flush=True)
        print(json.dumps({"chosen": chosen, "sweep": best,
                          "report": measure(chosen, report, ref_report),
                          "report all int8": measure([], report, ref_report)}))  # fmt: skip


if __name__ == "__main__":
    main()
