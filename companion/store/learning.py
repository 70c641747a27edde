"""What the on-device model stores: the bank's encodings and each participant's preference
model with the ratings it learned from (`model.bank`, `model.empathy` decide what they are).

Encodings arrive as raw float32 bytes and a preference model as its JSON, so the store needs
neither numpy nor the model's classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlite_utils

from companion.clock import iso
from companion.store.db import transaction

# story id, embedding bytes, emotion bytes
EncodingRow = tuple[str, bytes, bytes]


def store_encodings(
    db: sqlite_utils.Database, model_version: str, rows: Sequence[EncodingRow], at: datetime
) -> None:
    """Store (or replace) the encodings of `rows` under `model_version`, in one transaction."""
    if not rows:
        return
    now = iso(at)
    with transaction(db):
        for story_id, embedding, emotions in rows:
            db.execute(
                "INSERT OR REPLACE INTO story_embeddings (story_id, model_version, embedding, "
                "emotions, created_at) VALUES (?, ?, ?, ?, ?)",
                [story_id, model_version, embedding, emotions, now],
            )


def save_preference_model(
    db: sqlite_utils.Database, participant_id: str, state: str, n: int, model_version: str,
    at: datetime,
) -> None:  # fmt: skip
    """Store the participant's model (`state`, JSON) with the model version whose features it
    learned from. No transaction of its own: the caller's read-update-write holds one."""
    db.execute(
        "INSERT INTO participant_models (participant_id, state, n, updated_at, model_version) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(participant_id) DO UPDATE SET state = excluded.state, "
        "n = excluded.n, updated_at = excluded.updated_at, model_version = excluded.model_version",
        [participant_id, state, n, iso(at), model_version],
    )


def note_learned_rating(db: sqlite_utils.Database, exposure_id: int, rating: float) -> None:
    """The rating an exposure's story taught the preference model (in the caller's
    transaction, with the model it changed)."""
    db.execute("UPDATE story_exposures SET learned_rating = ? WHERE id = ?", [rating, exposure_id])
