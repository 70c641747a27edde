"""Empathic scoring of a story bank against a query (pure numpy, no I/O).

score = semantic * cos(query, story) + emotion * emotion_similarity(query, story)

Emotion similarity is by default the agreement sum_i p_i q_i: the probability that the story's
emotion and the participant's, each drawn from its distribution, are the same one. It is what a
same-feeling match asks for: cross-validated on the dev split it ranks a same-emotion story first
more often than the Bhattacharyya coefficient sum_i sqrt(p_i q_i), whose square roots lift the
small probabilities of unlikely emotions (docs/experiments/model-1.md; models/fit_matching.py
rechecks it). Both are one
matrix-vector product (10,000 stories in well under 5 ms); Bhattacharyya and Jensen-Shannon stay
available through the protocol's `[matching] emotion_similarity`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from companion.engine import protocol as study
from companion.engine.protocol import EMOTION_METRICS, EmotionMetric


class Encoded(Protocol):
    """Anything with an embedding (384,) and emotion probabilities (32,), e.g. TextEncoding."""

    @property
    def embedding(self) -> np.ndarray: ...

    @property
    def emotions(self) -> np.ndarray: ...


@dataclass(frozen=True)
class ScoreWeights:
    semantic: float = study.Protocol.semantic_weight  # the protocol's [matching] defaults
    emotion: float = study.Protocol.emotion_weight
    metric: EmotionMetric = study.Protocol.emotion_similarity


@dataclass(frozen=True)
class Scores:
    """Per-story arrays, shape (N,): total = semantic * w.semantic + emotion * w.emotion."""

    total: np.ndarray
    semantic: np.ndarray
    emotion: np.ndarray


def emotion_similarity(
    query: np.ndarray, bank: np.ndarray, metric: EmotionMetric = "bhattacharyya"
) -> np.ndarray:
    """Similarity in [0, 1] between one distribution (32,) and each row of bank (N, 32)."""
    q = np.clip(np.asarray(query, np.float32), 0.0, None)
    b = np.clip(np.asarray(bank, np.float32), 0.0, None)
    if metric == "agreement":
        return np.clip(b @ q, 0.0, 1.0)
    if metric == "bhattacharyya":
        return np.clip(np.sqrt(b) @ np.sqrt(q), 0.0, 1.0)
    if metric == "js":
        m = 0.5 * (b + q)
        with np.errstate(divide="ignore", invalid="ignore"):
            kl_q = np.where(q > 0, q * np.log2(q / m), 0.0).sum(1)
            kl_b = np.where(b > 0, b * np.log2(b / m), 0.0).sum(1)
        # JS divergence (base 2) is in [0, 1]; its square root is a metric (JS distance).
        return (1.0 - np.sqrt(np.clip(0.5 * (kl_q + kl_b), 0.0, 1.0))).astype(np.float32)
    raise ValueError(f"unknown emotion metric {metric!r}; use one of {', '.join(EMOTION_METRICS)}")


def score(
    query: Encoded,
    bank_embeddings: np.ndarray,
    bank_emotions: np.ndarray,
    weights: ScoreWeights | None = None,
) -> Scores:
    """Score every story; bank rows must be L2-normalised embeddings (as the Encoder returns)."""
    w = weights or ScoreWeights()
    emb = np.asarray(bank_embeddings, np.float32)
    emo = np.asarray(bank_emotions, np.float32)
    if emb.ndim != 2 or emo.ndim != 2 or emb.shape[0] != emo.shape[0]:
        raise ValueError(f"bank shapes {emb.shape} and {emo.shape} do not match (N,384), (N,32)")
    semantic = emb @ np.asarray(query.embedding, np.float32)
    emotion = emotion_similarity(query.emotions, emo, w.metric)
    return Scores(
        total=w.semantic * semantic + w.emotion * emotion, semantic=semantic, emotion=emotion
    )


def rank(
    query: Encoded,
    bank_embeddings: np.ndarray,
    bank_emotions: np.ndarray,
    weights: ScoreWeights | None = None,
    exclude_mask: np.ndarray | None = None,
    top_k: int | None = 10,
) -> list[tuple[int, float, dict[str, float]]]:
    """Best-first (index, total score, {"semantic", "emotion"}) for the top_k stories.

    exclude_mask: bool (N,), True = never return (e.g. already told to this participant).
    top_k=None returns every non-excluded story. Ties break by lower index (stable).
    """
    s = score(query, bank_embeddings, bank_emotions, weights)
    total = s.total.astype(np.float64)
    if exclude_mask is not None:
        mask = np.asarray(exclude_mask, bool)
        if mask.shape != total.shape:
            raise ValueError(f"exclude_mask shape {mask.shape} != bank size {total.shape}")
        total = np.where(mask, -np.inf, total)
    allowed = int(np.count_nonzero(np.isfinite(total)))
    k = allowed if top_k is None else min(top_k, allowed)
    if k <= 0:
        return []
    if k < len(total):
        part = np.argpartition(-total, k - 1)[:k]
        order = part[np.lexsort((part, -total[part]))]
    else:
        order = np.lexsort((np.arange(len(total)), -total))[:k]
    return [
        (
            int(i),
            float(total[i]),
            {"semantic": float(s.semantic[i]), "emotion": float(s.emotion[i])},
        )
        for i in order
    ]
