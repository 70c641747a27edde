"""Which emotions the shipped model confuses, on a labelled CSV (runtime code only).

    .venv/bin/python models/confusions.py ../shared/data/empatheticdialogues/situations_dev.csv

Prints one JSON line per (true, predicted top-1) pair, most frequent first, with its share of
the true emotion's rows, then each emotion's recall, lowest first (the model card's failure
modes come from here).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from companion.emotions import EMOTIONS
from companion.model.encode import Encoder, read_emotion_csv, resolve_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv", type=Path)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    labels, texts = read_emotion_csv(args.csv)
    encoder = Encoder.load(resolve_model(args.model))
    top = [int(np.argmax(e.emotions)) for e in encoder.encode_many(texts)]
    per_label = Counter(labels)
    pairs = Counter((y, p) for y, p in zip(labels, top, strict=True) if y != p)
    for (y, p), n in pairs.most_common(args.top):
        print(json.dumps({"true": EMOTIONS[y], "predicted": EMOTIONS[p], "n": n,
                          "share_of_true": round(n / per_label[y], 3)}))  # fmt: skip
    recall = {
        EMOTIONS[c]: sum(1 for y, p in zip(labels, top, strict=True) if y == c == p) / n
        for c, n in per_label.items()
    }
    for name, r in sorted(recall.items(), key=lambda kv: kv[1]):
        n = per_label[EMOTIONS.index(name)]
        print(json.dumps({"emotion": name, "recall": round(r, 3), "n": n}))


if __name__ == "__main__":
    main()
