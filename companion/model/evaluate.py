"""Matching quality on a labelled CSV (label 1..32, content): each row is a participant story
and every other row the bank; a hit is a top-ranked story with the same emotion label.

The ranking is the chooser's with no ratings yet: the empathic match score with the given
weights (the preference model's prior ranks exactly by it), over untagged bank stories.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from companion.model.encode import Encoder, read_emotion_csv
from companion.model.similarity import ScoreWeights, emotion_similarity


def precision_at(scores: np.ndarray, labels: np.ndarray, ks: tuple[int, ...]) -> dict[str, float]:
    """scores (n, n): row i ranks every column j != i; P@k = share of top k with i's label."""
    s = np.array(scores, np.float64)
    np.fill_diagonal(s, -np.inf)
    n = len(labels)
    out = {}
    kmax = max(ks)
    hits = np.zeros((n, kmax), bool)
    for i in range(n):
        # ties break by lower index, as the chooser's ranking does
        order = np.lexsort((np.arange(n), -s[i]))[:kmax]
        hits[i] = labels[order] == labels[i]
    for k in ks:
        out[f"p_at_{k}"] = round(float(hits[:, :k].mean()), 4)
    return out


def evaluate_matching(encoder: Encoder, csv_path: Path, weights: ScoreWeights) -> dict[str, object]:
    labels, texts = read_emotion_csv(Path(csv_path))
    encoded = encoder.encode_many(texts)
    emb = np.stack([e.embedding for e in encoded]).astype(np.float32)
    emo = np.stack([e.emotions for e in encoded]).astype(np.float32)
    y = np.asarray(labels)
    cosine = emb @ emb.T
    emotion = np.stack([emotion_similarity(p, emo, weights.metric) for p in emo])
    combined = weights.semantic * cosine + weights.emotion * emotion
    return {
        "n": len(y),
        "weights": {"semantic": weights.semantic, "emotion": weights.emotion},
        "emotion_similarity": weights.metric,
        **precision_at(combined, y, (1, 5)),
        "cosine": precision_at(cosine, y, (1, 5)),
        "emotion_only": precision_at(emotion, y, (1, 5)),
    }
