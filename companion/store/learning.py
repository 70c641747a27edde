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


def encoded_ids(db: sqlite_utils.Database, model_version: str) -> set[str]:
    """Ids of the stories `model_version` has encodings of."""
    rows = db.execute(
        "SELECT story_id FROM story_embeddings WHERE model_version = ?", [model_version]
    )
    return {r[0] for r in rows}


def encodings(db: sqlite_utils.Database, model_version: str) -> dict[str, tuple[bytes, bytes, int]]:
    """story id -> (embedding bytes, emotion bytes, word count) of every story
    `model_version` encoded."""
    return {
        r[0]: (r[1], r[2], r[3])
        for r in db.execute(
            "SELECT e.story_id, e.embedding, e.emotions, s.word_count FROM story_embeddings e "
            "JOIN stories s ON s.id = e.story_id WHERE e.model_version = ?",
            [model_version],
        )
    }


def preference_model(db: sqlite_utils.Database, participant_id: str) -> str | None:
    """The participant's stored preference model (JSON), if any."""
    row = db.execute(
        "SELECT state FROM participant_models WHERE participant_id = ?", [participant_id]
    ).fetchone()
    return row[0] if row else None


def preference_model_version(db: sqlite_utils.Database, participant_id: str) -> str | None:
    """The model version the participant's preference model learned from (None: unknown)."""
    row = db.execute(
        "SELECT model_version FROM participant_models WHERE participant_id = ?", [participant_id]
    ).fetchone()
    return row[0] if row else None


def last_exposure(db: sqlite_utils.Database, session_id: int) -> tuple[int, str | None] | None:
    """(id, components JSON) of the session's latest story exposure."""
    row = db.execute(
        "SELECT id, components FROM story_exposures WHERE session_id = ? ORDER BY id DESC",
        [session_id],
    ).fetchone()
    return (row[0], row[1]) if row else None


def learned_exposures(
    db: sqlite_utils.Database, participant_id: str
) -> list[tuple[int, int, str, float]]:
    """(id, session id, components JSON, learned rating) of every exposure the participant's
    model learned from, in the order it learned them."""
    return db.execute(
        "SELECT e.id, e.session_id, e.components, e.learned_rating FROM story_exposures e "
        "JOIN sessions s ON s.id = e.session_id WHERE s.participant_id = ? "
        "AND e.learned_rating IS NOT NULL ORDER BY e.id",
        [participant_id],
    ).fetchall()
