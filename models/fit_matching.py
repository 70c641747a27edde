"""Fit the default protocol's [matching] weights for the shipped model (runtime code only).

    .venv/bin/python models/fit_matching.py --data ../shared/data/empatheticdialogues

Encodes the dev split (situations and speaker stories, never trained on) with the runtime
encoder, then scores every (semantic weight, emotion similarity) of a small grid by matching
P@1 (`companion.model.evaluate`: each text a participant story, every other text of its file
the bank, a hit is a top story with the same emotion). Prints one JSON line per setting and
file, and a 2-fold estimate of the choice: the best setting picked on one half of each file,
scored on the other half, both ways. Edit companion/data/default_protocol.toml by hand.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import cast

import numpy as np

from companion.engine.protocol import EMOTION_METRICS, EmotionMetric
from companion.model.encode import Encoder, read_emotion_csv, resolve_model
from companion.model.evaluate import matching_metrics
from companion.model.similarity import ScoreWeights

DEV_FILES = ("situations_dev.csv", "speaker_dev.csv")
SEMANTIC = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=None)
    args = ap.parse_args()
    encoder = Encoder.load(resolve_model(args.model))
    grid = list(itertools.product(SEMANTIC, EMOTION_METRICS))
    halves: dict[tuple[float, str], list[float]] = {g: [0.0, 0.0] for g in grid}
    split: list[tuple[np.ndarray, list, np.ndarray]] = []
    for name in DEV_FILES:
        labels, texts = read_emotion_csv(args.data / name)
        y, enc = np.asarray(labels), encoder.encode_many(texts)
        half = np.arange(len(y)) % 2
        split.append((y, enc, half))
        for semantic, metric in grid:
            weights = ScoreWeights(semantic, round(1 - semantic, 2), cast(EmotionMetric, metric))
            whole = matching_metrics(y, enc, weights)
            print(json.dumps({"data": name, "semantic": semantic, "metric": metric,
                              "p_at_1": whole["p_at_1"], "p_at_5": whole["p_at_5"]}))  # fmt: skip
            for h in (0, 1):
                idx = np.flatnonzero(half == h)
                part = matching_metrics(y[idx], [enc[i] for i in idx], weights)
                halves[(semantic, metric)][h] += cast(float, part["p_at_1"]) / len(DEV_FILES)
    for h in (0, 1):
        best = max(grid, key=lambda g: halves[g][h])
        print(json.dumps({"chosen_on_half": h, "semantic": best[0], "metric": best[1],
                          "p_at_1_other_half": round(halves[best][1 - h], 4)}))  # fmt: skip
    best = max(grid, key=lambda g: sum(halves[g]))
    print(json.dumps({"best_on_all": {"semantic": best[0], "metric": best[1]}}))


if __name__ == "__main__":
    main()
