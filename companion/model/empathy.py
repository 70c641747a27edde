"""Empathic story matching with the on-device model, personalised from self-reports.

Ties the encoder, the empathic score and the per-participant preference model to the
database: a session ranks only the stories whose encodings are stored (`bank`), never
encodes the bank, and logs it when some are missing; every exposure logs the score it was
ranked on and its parts; each post-story rating updates the participant's model, which
`replay` recomputes exactly from the log.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import sqlite_utils

from companion.clock import utc_now
from companion.engine.match import Exposure, LexicalMatcher, Ranked, choose_story
from companion.engine.session import Participant, StoryChooser
from companion.engine.stories import Story, unheard_stories
from companion.model import personalize
from companion.model.bank import (  # noqa: F401  (re-exported: scripts and tests use them here)
    TAG_WEIGHT,
    BankEncodings,
    CachedEncoder,
    bank_cache_path,
    shipped_encodings,
    stored_encodings,
    story_emotions,
    write_bank_cache,
)
from companion.model.encode import Encoder
from companion.model.similarity import Scores, ScoreWeights, score
from companion.store import learning, upgrades
from companion.store.db import log_event, transaction
from companion.store.queries import heard_story_ids, post_story_rating

log = logging.getLogger(__name__)


# UCB over the emotion-family weights keeps the first pick the empathic best (Thompson draws
# would not). Measured on the shipped bank, a synthetic participant per family over 5 sessions:
# the liked family's share of the top 10 goes from 0.14 to 0.74 on average at scale 0.5
# (0.73 at 0.3); tests/engine/test_protocol_features.py.
PERSONALIZE = personalize.PersonalizeConfig(exploration="ucb", exploration_scale=0.5)


def load_state(db: sqlite_utils.Database, participant_id: str) -> personalize.PreferenceState:
    stored = learning.preference_model(db, participant_id)
    if stored:
        try:
            return personalize.PreferenceState.from_json(stored)
        except ValueError:  # learned over an older feature set: start again from the prior
            log.warning("preference model of %s has old features; starting afresh", participant_id)
    return personalize.initial_state(PERSONALIZE)


def save_state(
    db: sqlite_utils.Database, participant_id: str, state: personalize.PreferenceState,
    model_version: str,
) -> None:  # fmt: skip
    """Store the participant's model with the model version whose features it learned from."""
    learning.save_preference_model(
        db, participant_id, state.to_json(), state.n, model_version, utc_now()
    )


# No story told: the match is made on this neutral query (the preference model still ranks).
NEUTRAL_QUERY = "a day in my life"


def candidate_features(
    encoder: CachedEncoder, weights: ScoreWeights, query: str, bank: BankEncodings
) -> tuple[Scores, np.ndarray]:
    """The match scores of the bank's stories for what the participant told, and their
    preference features (one definition: the ranking and a model upgrade's re-fit)."""
    scores = score(encoder.encode(query or NEUTRAL_QUERY), bank.embeddings, bank.emotions, weights)
    return scores, personalize.story_features(scores.total, bank.emotions, bank.words)


class EmpathicMatcher:
    """Ranks candidates by the participant's preference model over empathic-match features."""

    name = "empathic"

    def __init__(
        self,
        db: sqlite_utils.Database,
        encoder: CachedEncoder,
        weights: ScoreWeights,
        state: personalize.PreferenceState,
        seed: int,
    ) -> None:
        self.db, self.encoder, self.weights, self.state, self.seed = (
            db, encoder, weights, state, seed,
        )  # fmt: skip

    def rank(self, query: str, candidates: Sequence[Story]) -> Sequence[Ranked]:
        """The encoded candidates, best first by the value the choice is made on.

        Ranked.score is that value (3 + predicted rating shift + exploration bonus); the
        components log its parts. Stories not encoded yet are left out and logged; if none is
        encoded, the lexical matcher ranks them (the bank is never encoded here).
        """
        if not candidates:
            return []
        bank = stored_encodings(self.db, self.encoder.version, candidates)
        if bank.unencoded:
            log_event(
                self.db, "bank_not_encoded",
                f"{len(bank.unencoded)} of {len(candidates)} unheard stories have no encoding "
                f"for {self.encoder.version}; chose among the {len(bank.stories)} encoded "
                "(run companion init or stories import to encode them)",
                level="warning",
            )  # fmt: skip
        if not bank.stories:
            return LexicalMatcher().rank(query, candidates)
        scores, features = candidate_features(self.encoder, self.weights, query, bank)
        value, bonus = personalize.values(self.state, features, self.seed)
        order = np.lexsort((np.arange(len(value)), -value))

        def entry(i: int) -> Ranked:
            components = {
                "match": round(float(scores.total[i]), 6),
                "semantic": round(float(scores.semantic[i]), 6),
                "emotion": round(float(scores.emotion[i]), 6),
                "weights": [self.weights.semantic, self.weights.emotion],
                "emotion_similarity": self.weights.metric,
                "predicted_rating": round(float(value[i] - bonus[i]), 6),
                "bonus": round(float(bonus[i]), 6),
                "features": [round(float(v), 9) for v in features[i]],
            }
            return Ranked(bank.stories[i], round(float(value[i]), 6), components)

        return LazyRanking(order, entry)


class LazyRanking(Sequence[Ranked]):
    """Best-first ranking whose entries are built when read: a session reads one of 10,000."""

    def __init__(self, order: np.ndarray, entry: Callable[[int], Ranked]) -> None:
        self._order, self._entry = order, entry

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Ranked: ...
    @overload
    def __getitem__(self, index: slice) -> list[Ranked]: ...
    def __getitem__(self, index: int | slice) -> Ranked | list[Ranked]:
        if isinstance(index, slice):
            return [self._entry(int(i)) for i in self._order[index]]
        return self._entry(int(self._order[index]))


@dataclass(frozen=True)
class Learned:
    rating: float
    n: int


class EmpathicChooser(StoryChooser):
    """StoryChooser backed by the model; also learns from post-story ratings."""

    def __init__(self, encoder: Encoder, weights: ScoreWeights) -> None:
        self.encoder = CachedEncoder(encoder)
        self.weights = weights

    def understand(self, text: str) -> Mapping[str, float] | None:
        return self.encoder.emotions(text)

    def related(self, phrase: str, text: str) -> float | None:
        """Cosine of the two embeddings: which topic phrase best stands for an earlier story."""
        a, b = self.encoder.encode(phrase).embedding, self.encoder.encode(text).embedding
        return float(np.dot(a, b))

    def choose(
        self, db: sqlite_utils.Database, participant: Participant, condition: str, query: str,
        rng: random.Random,
    ) -> Exposure | None:  # fmt: skip
        candidates = unheard_stories(db, participant.id)
        state = load_state(db, participant.id)
        seed = participant.seed * 1000 + len(heard_story_ids(db, participant.id))
        matcher = EmpathicMatcher(db, self.encoder, self.weights, state, seed)
        exposure = choose_story(condition, query, candidates, matcher, rng)
        if exposure is not None and query.strip():
            label, prob = self.encoder.encode(query).top_emotion()
            exposure = Exposure(
                exposure.story, exposure.condition, exposure.score, exposure.rank,
                {**exposure.components, "query_emotion": label, "query_emotion_p": round(prob, 6),
                 "model_version": self.encoder.version},
            )  # fmt: skip
        return exposure

    def learn(
        self, db: sqlite_utils.Database, participant_id: str, session_id: int,
        instruments: Sequence[str],
    ) -> Learned | None:  # fmt: skip
        """Update the participant's model from this session's post-story ratings."""
        row = learning.last_exposure(db, session_id)
        rating = post_story_rating(db, session_id, instruments)
        if row is None or rating is None:
            return None
        features = json.loads(row[1] or "{}").get("features")
        if features is None:
            return None
        with transaction(db):
            state = personalize.update(load_state(db, participant_id), features, rating)
            save_state(db, participant_id, state, self.encoder.version)
            learning.note_learned_rating(db, row[0], rating)
        return Learned(rating, state.n)


@dataclass(frozen=True)
class ReplayReport:
    participant_id: str
    ratings: int
    max_difference: float
    rating_mismatches: int  # logged learned_rating differs from the self-reports now stored

    @property
    def identical(self) -> bool:
        return self.max_difference == 0.0 and self.rating_mismatches == 0


def replay_participant(
    db: sqlite_utils.Database, participant_id: str, instruments: Sequence[str]
) -> ReplayReport:
    """Recompute the participant's model from the logged exposures and ratings; compare."""
    log_rows = learning.learned_exposures(db, participant_id)
    # Exposures from before a model upgrade are replayed with the features the upgrade
    # re-computed under the model the stored state was re-fitted on.
    version = learning.preference_model_version(db, participant_id)
    refitted = upgrades.exposure_features(db, version) if version else {}
    pairs = []
    mismatches = 0
    for exposure_id, session_id, components, learned in log_rows:
        features = refitted.get(exposure_id) or json.loads(components)["features"]
        if len(features) != personalize.N_FEATURES:
            continue  # logged under an older feature set, which the current model ignores
        if post_story_rating(db, session_id, instruments) != learned:
            mismatches += 1
        pairs.append((features, learned))
    replayed = personalize.replay(pairs, PERSONALIZE)
    stored = load_state(db, participant_id)
    diff = max(
        float(np.max(np.abs(np.asarray(replayed.precision) - np.asarray(stored.precision)))),
        float(np.max(np.abs(np.asarray(replayed.shift) - np.asarray(stored.shift)))),
        float(abs(replayed.n - stored.n)),
    )
    return ReplayReport(participant_id, len(pairs), diff, mismatches)
