"""The model's quality on a labelled CSV (label 1..32, content): emotions, matching and
acknowledgements, each one JSON-able dict whose field names stay the same across models (so
older numbers remain comparable). Every text is encoded once, as a session encodes it.

Matching: each row is a participant story and every other row the bank; a hit is a top-ranked
story with the same emotion label. The ranking is the chooser's with no ratings yet: the
empathic match score with the given weights (the preference model's prior ranks exactly by it),
over untagged bank stories.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from companion.emotions import EMOTIONS
from companion.model.encode import Encoder, TextEncoding, read_emotion_csv
from companion.model.similarity import ScoreWeights, emotion_similarity


def encoded(encoder: Encoder, csv_path: Path) -> tuple[np.ndarray, list[TextEncoding]]:
    """Labels (0-based) and encodings of a labelled CSV; ConfigError names a malformed line."""
    labels, texts = read_emotion_csv(Path(csv_path))
    return np.asarray(labels), encoder.encode_many(texts)


def emotion_metrics(y: np.ndarray, encodings: Sequence[TextEncoding]) -> dict[str, float | int]:
    """Top-1/top-3 accuracy and macro-F1 (classes absent from truth and predictions left out)."""
    probs = np.stack([e.emotions for e in encodings])
    order = np.argsort(-probs, axis=1)
    f1 = []
    for c in range(len(EMOTIONS)):
        if not np.any(y == c) and not np.any(order[:, 0] == c):
            continue
        tp = np.sum((order[:, 0] == c) & (y == c))
        f1.append(2 * tp / (np.sum(order[:, 0] == c) + np.sum(y == c)))
    return {
        "n": len(y),
        "top1": round(float(np.mean(order[:, 0] == y)), 4),
        "top3": round(float(np.mean((order[:, :3] == y[:, None]).any(1))), 4),
        "macro_f1": round(float(np.mean(f1)), 4),
    }


def acknowledgement_metrics(
    y: np.ndarray, encodings: Sequence[TextEncoding], rule: dict | None = None
) -> dict[str, float | int | None]:
    """How the acknowledgement rule (default: the shipped one) names feelings: fractions named
    exactly, by family, by valence and not at all, the precision of each at the level named,
    and whether the words' valence fits the story's (`engine.ackrule.score`)."""
    from companion.engine.ackrule import decide, load_rule, score

    rule = load_rule() if rule is None else rule
    decisions = [
        decide(rule, {name: float(p) for name, p in zip(EMOTIONS, e.emotions, strict=True)})
        for e in encodings
    ]
    return score(decisions, [EMOTIONS[i] for i in y])


def precision_at(scores: np.ndarray, labels: np.ndarray, ks: tuple[int, ...]) -> dict[str, float]:
    """scores (n, n): row i ranks every column j != i; P@k = share of top k with i's label
    (of the n - 1 others when there are fewer than k)."""
    s = np.array(scores, np.float64)
    np.fill_diagonal(s, -np.inf)
    n = len(labels)
    out = {}
    kmax = max(1, min(max(ks), n - 1))
    hits = np.zeros((n, kmax), bool)
    for i in range(n):
        # ties break by lower index, as the chooser's ranking does
        order = np.lexsort((np.arange(n), -s[i]))[:kmax]
        hits[i] = labels[order] == labels[i]
    for k in ks:
        out[f"p_at_{k}"] = round(float(hits[:, :k].mean()), 4)
    return out


def matching_metrics(
    y: np.ndarray, encodings: Sequence[TextEncoding], weights: ScoreWeights
) -> dict[str, object]:
    emb = np.stack([e.embedding for e in encodings]).astype(np.float32)
    emo = np.stack([e.emotions for e in encodings]).astype(np.float32)
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


def evaluate_emotions(encoder: Encoder, csv_path: Path) -> dict[str, float | int]:
    return emotion_metrics(*encoded(encoder, csv_path))


def evaluate_acknowledgements(
    encoder: Encoder, csv_path: Path, rule: dict | None = None
) -> dict[str, float | int | None]:
    return acknowledgement_metrics(*encoded(encoder, csv_path), rule)


def evaluate_matching(encoder: Encoder, csv_path: Path, weights: ScoreWeights) -> dict[str, object]:
    return matching_metrics(*encoded(encoder, csv_path), weights)


def evaluate_all(encoder: Encoder, csv_path: Path, weights: ScoreWeights) -> list[dict]:
    """The three evaluations from one encoding of the file, each tagged with what it measures
    ("eval") and the model ("model")."""
    y, encodings = encoded(encoder, csv_path)
    tag = {"model": encoder.version}
    return [
        {"eval": "emotions", **tag, **emotion_metrics(y, encodings)},
        {"eval": "matching", **tag, **matching_metrics(y, encodings, weights)},
        {"eval": "acknowledgements", **tag, **acknowledgement_metrics(y, encodings)},
    ]
