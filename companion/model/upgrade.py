"""Moving a home to another on-device model, before any session runs under it.

A session only reads stored encodings (`bank.stored_encodings`), so everything it reads is
re-encoded when the model changes, at the first start after the upgrade (`app.encode_bank`:
the service before its scheduler starts, `init`, `stories import`; `app.run_in_home` before
a session's first word, so a restored old backup is moved too):
the bank's stories for the new model (copied from the package where shipped), and each
participant's preference model re-fitted on features the new model computes from what the
participant told and how they rated each story. Stored rows keep the model that made them,
and the earlier model's encodings stay (going back finds them). Each upgrade is recorded
(`model_upgrades`, a `model_upgraded` event); one interrupted is finished at the next start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sqlite_utils

from companion.engine import answers
from companion.engine.answers import AnswerWords
from companion.engine.stories import Story
from companion.model import personalize
from companion.model.bank import (
    CachedEncoder,
    EncodeResult,
    Progress,
    encode_bank,
    stored_encodings,
)
from companion.model.empathy import PERSONALIZE, candidate_features, save_state
from companion.model.similarity import ScoreWeights
from companion.store import upgrades
from companion.store.db import log_event, transaction

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpgradeResult:
    from_models: tuple[str, ...]
    to_model: str
    bank: EncodeResult
    participants: int  # preference models re-fitted
    seconds: float


def upgrade_home(
    db: sqlite_utils.Database,
    encoder: CachedEncoder,
    weights: ScoreWeights,
    stories: Sequence[Story],
    words: AnswerWords,
    progress: Progress | None = None,
) -> UpgradeResult | None:
    """Re-encode the home for `encoder`'s model if it was made by another one; None if not."""
    version = encoder.version
    earlier, stale = upgrades.pending(db, version)
    if not earlier and not stale:
        return None
    began = time.perf_counter()
    log.info("moving this home from %s to %s", ", ".join(earlier) or "-", version)
    with transaction(db):
        upgrade_id = upgrades.begin_upgrade(db, earlier, version)
    bank = encode_bank(db, encoder, stories, progress)
    by_id = {s.id: s for s in stories}
    for participant_id in stale:
        refit(db, encoder, weights, participant_id, by_id, words)
    seconds = time.perf_counter() - began
    with transaction(db):
        upgrades.finish_upgrade(db, upgrade_id, bank.total, len(stale))
    log_event(db, "model_upgraded",
              f"{', '.join(earlier) or '-'} -> {version}: {bank.total} stories "
              f"({bank.encoded} encoded), {len(stale)} preference models re-fitted "
              f"in {seconds:.1f} s")  # fmt: skip
    return UpgradeResult(tuple(earlier), version, bank, len(stale), seconds)


def refit(
    db: sqlite_utils.Database,
    encoder: CachedEncoder,
    weights: ScoreWeights,
    participant_id: str,
    stories: dict[str, Story],
    words: AnswerWords,
) -> personalize.PreferenceState:
    """The participant's preference model learned again, in the same order from the same
    ratings, on the features the current model computes (stored per exposure, for `replay`)."""
    state = personalize.initial_state(PERSONALIZE)
    computed: dict[int, list[float]] = {}
    for rated in upgrades.rated_exposures(db, participant_id):
        story = stories.get(rated.story_id)
        bank = stored_encodings(db, encoder.version, [story]) if story else None
        if bank is None or not bank.stories:
            continue  # a story no longer in the bank: its rating cannot be placed
        # the story as the session took it: the home's protocol's words say which turn is "done"
        told = " ".join(t for t in rated.story_turns if not answers.is_done(t, words=words))
        _, features = candidate_features(encoder, weights, told, bank)
        # rounded as the session logs features, so `replay` recomputes this state exactly
        values = [round(float(v), 9) for v in np.asarray(features[0])]
        computed[rated.id] = values
        state = personalize.update(state, values, rated.rating)
    with transaction(db):
        upgrades.save_exposure_features(db, encoder.version, computed)
        save_state(db, participant_id, state, encoder.version)
    return state
