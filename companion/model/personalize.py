"""Per-participant story preference model (pure: no DB, no clock).

Bayesian linear regression of the participant's empathy rating on a few story features, updated
online in closed form; candidates are reranked by Thompson sampling (or UCB / greedy) with an
explicit seed, so every decision can be reproduced exactly from the logged ratings (`replay`).

Features (FEATURE_NAMES): bias, the empathic match score (the protocol's weighted sum of
semantic and emotion similarity), a one-hot over the emotion family of the story's own top
emotion, and log story length.

The value a candidate is ranked on is the predicted rating plus an exploration bonus computed
over the emotion-family block only (the participant's preference); with no ratings it is
3 + prior_match * match + a constant, so the first pick is the plain empathic best match, and
length or match never earn exploration credit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from companion.emotions import EMOTIONS, FAMILY_NAMES
from companion.emotions import FAMILY_OF as EMOTION_FAMILY

# emotion index -> family index (companion.emotions.FAMILIES), for vectorised features
FAMILY_OF: np.ndarray = np.array(
    [FAMILY_NAMES.index(EMOTION_FAMILY[e]) for e in EMOTIONS], dtype=np.int64
)

FEATURE_NAMES: tuple[str, ...] = (
    "bias", "match", *(f"family_{f}" for f in FAMILY_NAMES), "log_words",
)  # fmt: skip
N_FEATURES = len(FEATURE_NAMES)
# The columns exploration is about: which emotion family this participant responds to.
PREFERENCE = slice(2, 2 + len(FAMILY_NAMES))

Exploration = Literal["thompson", "ucb", "greedy"]


@dataclass(frozen=True)
class PersonalizeConfig:
    """None fields use the defaults below. Ratings are centred on `rating_center` before fitting."""

    rating_center: float | None = None  # default 3.0: middle of a 1..5 scale
    noise_var: float | None = None  # default 1.0: rating noise variance (rating units squared)
    prior_precision: float | None = None  # default 1.0 on every weight
    # Prior mean: with no ratings yet, rank exactly like the empathic match score.
    prior_match: float | None = None  # default 2.5 (rating points per unit of match)
    exploration: Exploration = "thompson"
    exploration_scale: float | None = None  # default 1.0: multiplies the sampled/UCB spread

    def get(self, name: str, default: float) -> float:
        value = getattr(self, name)
        return default if value is None else float(value)


def story_features(
    match: np.ndarray | float,
    story_emotions: np.ndarray,
    story_words: np.ndarray | int,
) -> np.ndarray:
    """Feature rows (N, N_FEATURES) for N candidate stories (or (N_FEATURES,) for one).

    match: the empathic score (similarity.score(...).total, the protocol's weights);
    story_emotions: (N, 32) or (32,) probabilities of the story itself; story_words: word
    count(s) of the story text.
    """
    single = np.ndim(story_emotions) == 1
    emo = np.atleast_2d(np.asarray(story_emotions, np.float64))
    n = emo.shape[0]
    x = np.zeros((n, N_FEATURES))
    x[:, 0] = 1.0
    x[:, 1] = np.broadcast_to(np.asarray(match, np.float64), (n,))
    x[np.arange(n), PREFERENCE.start + FAMILY_OF[np.argmax(emo, axis=1)]] = 1.0
    words = np.broadcast_to(np.asarray(story_words, np.float64), (n,))
    x[:, -1] = np.log1p(np.maximum(words, 0.0)) / math.log(1000.0)  # ~0..1 for 0..1000 words
    return x[0] if single else x


@dataclass(frozen=True)
class PreferenceState:
    """Posterior natural parameters: precision matrix and precision-weighted mean (+ count)."""

    precision: tuple[tuple[float, ...], ...]
    shift: tuple[float, ...]
    n: int = 0
    config: PersonalizeConfig = field(default_factory=PersonalizeConfig)

    def mean(self) -> np.ndarray:
        return np.linalg.solve(np.asarray(self.precision), np.asarray(self.shift))

    def covariance(self) -> np.ndarray:
        return np.linalg.inv(np.asarray(self.precision))

    def weights(self) -> dict[str, float]:
        """Posterior mean weight per feature (for logs and analysis)."""
        return dict(zip(FEATURE_NAMES, (float(v) for v in self.mean()), strict=True))

    def to_json(self) -> str:
        cfg = {k: v for k, v in self.config.__dict__.items() if v is not None}
        return json.dumps({"precision": self.precision, "shift": self.shift, "n": self.n,
                           "config": cfg, "features": FEATURE_NAMES})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> PreferenceState:
        data = json.loads(text)
        if tuple(data.get("features", ())) != FEATURE_NAMES:
            raise ValueError("preference state was saved with different features; replay ratings")
        return cls(
            precision=tuple(tuple(float(v) for v in row) for row in data["precision"]),
            shift=tuple(float(v) for v in data["shift"]),
            n=int(data["n"]),
            config=PersonalizeConfig(**data.get("config", {})),
        )


def initial_state(config: PersonalizeConfig | None = None) -> PreferenceState:
    cfg = config or PersonalizeConfig()
    alpha = cfg.get("prior_precision", 1.0)
    mu0 = np.zeros(N_FEATURES)
    mu0[1] = cfg.get("prior_match", 2.5)
    prec = alpha * np.eye(N_FEATURES)
    return _state(prec, prec @ mu0, 0, cfg)


def _state(prec: np.ndarray, shift: np.ndarray, n: int, cfg: PersonalizeConfig) -> PreferenceState:
    return PreferenceState(
        precision=tuple(tuple(float(v) for v in row) for row in prec),
        shift=tuple(float(v) for v in shift),
        n=n,
        config=cfg,
    )


def update(
    state: PreferenceState, features: Sequence[float] | np.ndarray, rating: float
) -> PreferenceState:
    """Posterior after one (story features, participant's mean empathy rating) observation."""
    x = np.asarray(features, np.float64)
    if x.shape != (N_FEATURES,):
        raise ValueError(f"features must have shape ({N_FEATURES},), got {x.shape}")
    if not math.isfinite(rating):
        raise ValueError(f"rating must be a finite number, got {rating!r}")
    cfg = state.config
    beta = 1.0 / cfg.get("noise_var", 1.0)
    y = float(rating) - cfg.get("rating_center", 3.0)
    prec = np.asarray(state.precision) + beta * np.outer(x, x)
    shift = np.asarray(state.shift) + beta * y * x
    return _state(prec, shift, state.n + 1, cfg)


def replay(
    ratings_log: Iterable[tuple[Sequence[float], float]], config: PersonalizeConfig | None = None
) -> PreferenceState:
    """Rebuild the state from logged (features, rating) pairs, in order."""
    state = initial_state(config)
    for features, rating in ratings_log:
        state = update(state, features, rating)
    return state


def predict(state: PreferenceState, candidates: np.ndarray) -> np.ndarray:
    """Posterior mean predicted rating (centred) per candidate row."""
    return np.atleast_2d(np.asarray(candidates, np.float64)) @ state.mean()


def values(
    state: PreferenceState, candidates: np.ndarray, rng_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(value, bonus) per candidate row: value = 3 + predicted centred rating + bonus.

    The bonus explores the emotion-family weights only (UCB: their posterior spread;
    Thompson: a seeded draw of them), so it never depends on length or match score.
    """
    x = np.atleast_2d(np.asarray(candidates, np.float64))
    if x.shape[1] != N_FEATURES:
        raise ValueError(f"candidates must have {N_FEATURES} feature columns, got {x.shape[1]}")
    cfg = state.config
    scale = cfg.get("exploration_scale", 1.0)
    mean = state.mean()
    fam = x[:, PREFERENCE]
    cov = state.covariance()[PREFERENCE, PREFERENCE]
    if cfg.exploration == "thompson":
        rng = np.random.default_rng(rng_seed)
        chol = np.linalg.cholesky((cov + cov.T) / 2.0)
        bonus = fam @ (scale * (chol @ rng.standard_normal(fam.shape[1])))
    elif cfg.exploration == "ucb":
        bonus = scale * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", fam, cov, fam), 0.0))
    elif cfg.exploration == "greedy":
        bonus = np.zeros(len(x))
    else:
        raise ValueError(f"unknown exploration {cfg.exploration!r}; use thompson, ucb or greedy")
    return cfg.get("rating_center", 3.0) + x @ mean + bonus, bonus


def rerank(state: PreferenceState, candidates: np.ndarray, rng_seed: int) -> list[int]:
    """Candidate row indices, best first, by `values`.

    Same state + candidates + seed -> same ordering. Ties break by lower index.
    """
    value, _ = values(state, candidates, rng_seed)
    return [int(i) for i in np.lexsort((np.arange(len(value)), -value))]
