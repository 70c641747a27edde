"""What a move to another on-device model reads and writes (`model.upgrade` does the encoding).

The encodings themselves are kept per model (`story_embeddings.model_version`,
`exposure_features.model_version`, `participant_models.model_version`), so the rows always say
which model made them, and going back to an earlier model finds its encodings still there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlite_utils

from companion.clock import iso, utc_now


@dataclass(frozen=True)
class RatedExposure:
    """A rated story exposure, with what the participant told in that session."""

    id: int
    session_id: int
    story_id: str
    rating: float
    story_turns: tuple[str, ...]  # what the participant said to the story invitations


def models_in_use(db: sqlite_utils.Database) -> list[str]:
    """Every model version the home's bank encodings and preference models come from (a
    preference model learned before schema v5 names none: `stale_participants` finds it)."""
    found = {r[0] for r in db.execute("SELECT DISTINCT model_version FROM story_embeddings")}
    found |= {
        r[0]
        for r in db.execute("SELECT DISTINCT model_version FROM participant_models")
        if r[0] is not None
    }
    return sorted(found)


def stale_participants(db: sqlite_utils.Database, model_version: str) -> list[str]:
    """Participants whose preference model was learned from another model's features."""
    return [
        r[0]
        for r in db.execute(
            "SELECT participant_id FROM participant_models WHERE model_version IS NOT ? "
            "ORDER BY participant_id",
            [model_version],
        )
    ]


def pending(db: sqlite_utils.Database, version: str) -> tuple[list[str], list[str]]:
    """(earlier models still in use, participants to re-fit) when the home has not moved to
    `version` yet; both empty when there is nothing to upgrade."""
    stale = stale_participants(db, version)
    earlier = [m for m in models_in_use(db) if m != version]
    last = last_upgrade(db)
    moved = last is not None and last["to_model"] == version and last["finished_at"]
    if moved and not stale:
        return [], []
    return earlier, stale


def rated_exposures(db: sqlite_utils.Database, participant_id: str) -> list[RatedExposure]:
    """The participant's rated exposures in the order they were learned."""
    rows = db.execute(
        "SELECT e.id, e.session_id, e.story_id, e.learned_rating FROM story_exposures e "
        "JOIN sessions s ON s.id = e.session_id WHERE s.participant_id = ? "
        "AND e.learned_rating IS NOT NULL ORDER BY e.id",
        [participant_id],
    ).fetchall()
    out = []
    for exposure_id, session_id, story_id, rating in rows:
        parts = [
            r[0]
            for r in db.execute(
                "SELECT text FROM turns WHERE session_id = ? AND speaker = 'participant' "
                "AND purpose = 'story' ORDER BY seq",
                [session_id],
            )
        ]
        turns = tuple(p.strip() for p in parts if p and p.strip())
        out.append(RatedExposure(exposure_id, session_id, story_id, float(rating), turns))
    return out


def exposure_features(db: sqlite_utils.Database, model_version: str) -> dict[int, list[float]]:
    """exposure id -> the features `model_version` computed for it at an upgrade."""
    return {
        r[0]: json.loads(r[1])
        for r in db.execute(
            "SELECT exposure_id, features FROM exposure_features WHERE model_version = ?",
            [model_version],
        )
    }


def save_exposure_features(
    db: sqlite_utils.Database, model_version: str, features: Mapping[int, Sequence[float]]
) -> None:
    now = iso(utc_now())
    for exposure_id, values in features.items():
        db.execute(
            "INSERT OR REPLACE INTO exposure_features (exposure_id, model_version, features, "
            "created_at) VALUES (?, ?, ?, ?)",
            [exposure_id, model_version, json.dumps([round(float(v), 9) for v in values]), now],
        )


def begin_upgrade(db: sqlite_utils.Database, from_models: Sequence[str], to_model: str) -> int:
    cur = db.execute(
        "INSERT INTO model_upgrades (from_models, to_model, started_at) VALUES (?, ?, ?)",
        [json.dumps(list(from_models)), to_model, iso(utc_now())],
    )
    return int(cur.lastrowid or 0)


def finish_upgrade(
    db: sqlite_utils.Database, upgrade_id: int, stories: int, participants: int
) -> None:
    db.execute(
        "UPDATE model_upgrades SET stories = ?, participants = ?, finished_at = ? WHERE id = ?",
        [stories, participants, iso(utc_now()), upgrade_id],
    )


def last_upgrade(db: sqlite_utils.Database) -> dict | None:
    """The latest upgrade row (finished or not), for `status` and `doctor`."""
    row = db.execute(
        "SELECT id, from_models, to_model, stories, participants, started_at, finished_at "
        "FROM model_upgrades ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    keys = ("id", "from_models", "to_model", "stories", "participants", "started_at",
            "finished_at")  # fmt: skip
    return {**dict(zip(keys, row, strict=True)), "from_models": json.loads(row[1])}
