"""Empathic scoring: semantic + emotion similarity, ranking, exclusion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from companion.model.similarity import ScoreWeights, emotion_similarity, rank, score


@dataclass(frozen=True)
class Query:
    embedding: np.ndarray
    emotions: np.ndarray


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def random_bank(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    emb = unit(rng.standard_normal((n, 384)))
    emo = rng.dirichlet(np.full(32, 0.3), size=n).astype(np.float32)
    return emb, emo


def test_emotion_similarity_bounds_and_identity() -> None:
    p = np.zeros(32, np.float32)
    p[5] = 1.0
    q = np.zeros(32, np.float32)
    q[16] = 1.0
    bank = np.stack([p, q, (p + q) / 2])
    for metric in ("agreement", "bhattacharyya", "js"):
        s = emotion_similarity(p, bank, metric)  # type: ignore[arg-type]
        assert s[0] == pytest.approx(1.0, abs=1e-6)
        assert s[1] == pytest.approx(0.0, abs=1e-6)
        assert 0.0 < s[2] < 1.0
    # JS distance of a point mass vs the half/half mix: sqrt(JS) with JS = 1 - 0.75*log2(3) + 0.5
    js = 0.5 * (np.log2(2 / 1.5) + (0.5 * np.log2(0.5 / 0.75) + 0.5 * np.log2(0.5 / 0.25)))
    assert emotion_similarity(p, bank, "js")[2] == pytest.approx(1 - np.sqrt(js), abs=1e-5)
    with pytest.raises(ValueError, match="metric"):
        emotion_similarity(p, bank, "cosine")  # type: ignore[arg-type]


def test_score_combines_components_with_weights() -> None:
    emb, emo = random_bank(50)
    query = Query(emb[3], emo[7])
    w = ScoreWeights(semantic=0.25, emotion=0.75, metric="bhattacharyya")
    s = score(query, emb, emo, w)
    assert s.semantic[3] == pytest.approx(1.0, abs=1e-5)
    assert s.emotion[7] == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(s.total, 0.25 * s.semantic + 0.75 * s.emotion)
    assert np.allclose(s.semantic, emb @ emb[3], atol=1e-6)


def test_agreement_is_the_chance_of_the_same_emotion_and_is_the_default() -> None:
    """A story as sure of the participant's main feeling beats one that only echoes the
    unlikely ones: agreement ranks them so, Bhattacharyya (the square roots lift the tails) the
    other way round."""
    q = np.zeros(32, np.float32)
    q[0], q[1:11] = 0.5, 0.05  # mostly emotion 0, a little of ten others
    same_main = np.zeros(32, np.float32)
    same_main[0], same_main[11:21] = 0.5, 0.05  # emotion 0 as likely, other tails
    echo_tail = np.zeros(32, np.float32)
    echo_tail[0], echo_tail[1:11] = 0.1, 0.09  # the query's tails, emotion 0 unlikely
    bank = np.stack([same_main, echo_tail])
    agreement = emotion_similarity(q, bank, "agreement")
    assert agreement == pytest.approx([0.25, 0.095], abs=1e-6)  # P(both draws are the same)
    assert agreement[0] > agreement[1]
    bhattacharyya = emotion_similarity(q, bank, "bhattacharyya")
    assert bhattacharyya[1] > bhattacharyya[0]
    assert ScoreWeights().metric == "agreement"
    emb = unit(np.ones((2, 384), np.float32))  # equal semantics: the emotions decide
    assert np.argmax(score(Query(emb[0], q), emb, bank).total) == 0


def test_rank_orders_best_first_and_respects_exclusion() -> None:
    emb, emo = random_bank(200, seed=1)
    query = Query(emb[10], emo[10])
    ranked = rank(query, emb, emo, ScoreWeights(), top_k=None)
    assert ranked[0][0] == 10
    totals = [t for _, t, _ in ranked]
    assert totals == sorted(totals, reverse=True) and len(ranked) == 200
    idx, total, parts = ranked[5]
    assert total == pytest.approx(0.2 * parts["semantic"] + 0.8 * parts["emotion"], abs=1e-6)
    mask = np.zeros(200, bool)
    mask[[10, ranked[1][0]]] = True
    top = rank(query, emb, emo, ScoreWeights(), exclude_mask=mask, top_k=3)
    assert [i for i, _, _ in top] == [i for i, _, _ in ranked[2:5]]
    assert rank(query, emb, emo, exclude_mask=np.ones(200, bool)) == []


def test_emotion_weight_changes_the_winner() -> None:
    query = Query(unit(np.eye(384)[0]), np.eye(32, dtype=np.float32)[5])
    emb = unit(
        np.stack([np.eye(384)[0] + 0.1 * np.eye(384)[1], np.eye(384)[0] + 0.6 * np.eye(384)[2]])
    )
    emo = np.stack([np.eye(32)[16], np.eye(32)[5]]).astype(np.float32)
    semantic_only = rank(query, emb, emo, ScoreWeights(semantic=1.0, emotion=0.0))
    empathic = rank(query, emb, emo, ScoreWeights(semantic=0.6, emotion=0.4))
    assert semantic_only[0][0] == 0 and empathic[0][0] == 1


def test_bad_shapes_are_rejected() -> None:
    emb, emo = random_bank(5)
    with pytest.raises(ValueError, match="shapes"):
        score(Query(emb[0], emo[0]), emb, emo[:4])
    with pytest.raises(ValueError, match="exclude_mask"):
        rank(Query(emb[0], emo[0]), emb, emo, exclude_mask=np.zeros(4, bool))
