"""The study database's schema history: versioned migrations, append only.

Researchers' scripts rely on these table and column names; `store.schema` describes every
column (the codebook and the docs/schema.md table are checked against a migrated database).
Never edit a released migration: add the next one.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils


def _v1_core(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE participants (
            id TEXT PRIMARY KEY,
            name TEXT,
            timezone TEXT NOT NULL,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            participant_id TEXT NOT NULL REFERENCES participants(id),
            protocol_id TEXT NOT NULL,
            protocol_version INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'daily'
                CHECK (kind IN ('daily', 'enrolment', 'exit')),
            mode TEXT NOT NULL CHECK (mode IN ('text', 'voice')),
            status TEXT NOT NULL
                CHECK (status IN ('running', 'completed', 'interrupted', 'aborted', 'missed')),
            reason TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            timezone TEXT NOT NULL,
            local_date TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            speaker TEXT NOT NULL CHECK (speaker IN ('companion', 'participant')),
            purpose TEXT NOT NULL,
            text TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT NOT NULL,
            asr_confidence REAL,
            UNIQUE (session_id, seq)
        )"""
    )
    db.execute(
        """CREATE TABLE stories (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            text TEXT NOT NULL,
            emotion TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL,
            word_count INTEGER NOT NULL,
            content_hash TEXT NOT NULL UNIQUE,
            added_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE story_exposures (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            story_id TEXT NOT NULL REFERENCES stories(id),
            condition TEXT NOT NULL CHECK (condition IN ('matched', 'random')),
            match_score REAL,
            rank INTEGER,
            exposed_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE self_reports (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id),
            instrument TEXT NOT NULL,
            item TEXT NOT NULL,
            value INTEGER,
            raw_answer TEXT,
            attempts INTEGER NOT NULL,
            answered_at TEXT NOT NULL,
            UNIQUE (session_id, instrument, item)
        )"""
    )
    db.execute(
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            level TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT,
            session_id INTEGER REFERENCES sessions(id)
        )"""
    )


def _v2_details(db: sqlite_utils.Database) -> None:
    # Free-text answers, audio references, match score components and lookup indexes.
    db.execute("ALTER TABLE self_reports ADD COLUMN value_text TEXT")
    db.execute(
        "ALTER TABLE self_reports ADD COLUMN status TEXT NOT NULL DEFAULT 'answered' "
        "CHECK (status IN ('answered', 'skipped', 'missing'))"
    )
    db.execute("ALTER TABLE turns ADD COLUMN audio_path TEXT")
    db.execute("ALTER TABLE story_exposures ADD COLUMN components TEXT")
    db.execute("ALTER TABLE story_exposures ADD COLUMN story_condition TEXT")
    db.execute("CREATE INDEX sessions_participant ON sessions(participant_id, started_at)")
    db.execute("CREATE INDEX exposures_session ON story_exposures(session_id)")
    db.execute("CREATE INDEX self_reports_session ON self_reports(session_id)")
    db.execute("CREATE INDEX events_ts ON events(ts)")


def _v3_model(db: sqlite_utils.Database) -> None:
    # The on-device model: bank encodings cached per model version, per-participant
    # preference models, and the rating each exposure taught the model (for exact replay).
    db.execute(
        """CREATE TABLE story_embeddings (
            story_id TEXT NOT NULL REFERENCES stories(id),
            model_version TEXT NOT NULL,
            embedding BLOB NOT NULL,
            emotions BLOB NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (story_id, model_version)
        )"""
    )
    db.execute(
        """CREATE TABLE participant_models (
            participant_id TEXT PRIMARY KEY REFERENCES participants(id),
            state TEXT NOT NULL,
            n INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        )"""
    )
    db.execute("ALTER TABLE story_exposures ADD COLUMN learned_rating REAL")


INVITATION_OUTCOMES = ("accepted", "snoozed", "declined", "no_answer", "error", "busy", "disk_full")


def _v4_invitations_protocols(db: sqlite_utils.Database) -> None:
    # Invitation attempts were log text in events.detail ("2026-12-01#0 attempt=1
    # outcome=snoozed"); the service's state now lives in a table (the old events stay, as a
    # log). The protocols a device ran under are recorded so reports and codebooks read the
    # instruments actually used.
    outcomes = ", ".join(f"'{o}'" for o in INVITATION_OUTCOMES)
    db.execute(
        f"""CREATE TABLE invitations (
            id INTEGER PRIMARY KEY,
            slot_key TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ({outcomes})),
            at TEXT NOT NULL,
            session_id INTEGER REFERENCES sessions(id),
            UNIQUE (slot_key, attempt)
        )"""
    )
    db.execute(
        """CREATE TABLE protocols (
            id TEXT NOT NULL,
            version INTEGER NOT NULL,
            title TEXT NOT NULL,
            definition TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (id, version)
        )"""
    )
    attempts: dict[str, int] = {}
    rows = db.execute(
        "SELECT ts, detail, session_id FROM events WHERE kind = 'invitation' ORDER BY id"
    ).fetchall()
    for ts, detail, session_id in rows:
        key, *parts = (detail or "").split()
        fields = dict(part.split("=", 1) for part in parts if "=" in part)
        outcome = fields.get("outcome", "no_answer")
        attempts[key] = attempts.get(key, 0) + 1  # numbered by order, as the service counted
        db.execute(
            "INSERT INTO invitations (slot_key, attempt, outcome, at, session_id) "
            "VALUES (?, ?, ?, ?, ?)",
            [key, attempts[key], outcome if outcome in INVITATION_OUTCOMES else "error", ts,
             session_id],
        )  # fmt: skip
    db.execute("CREATE INDEX invitations_slot ON invitations(slot_key)")


def _v5_model_upgrades(db: sqlite_utils.Database) -> None:
    # A new on-device model re-encodes what sessions read before any session runs under it
    # (`model.upgrade`): each preference model records the model whose features it learned
    # from (NULL: learned before this migration, by companion-empathy-1), each exposure's
    # features are kept per model, and each upgrade is recorded.
    db.execute("ALTER TABLE participant_models ADD COLUMN model_version TEXT")
    db.execute(
        """CREATE TABLE exposure_features (
            exposure_id INTEGER NOT NULL REFERENCES story_exposures(id),
            model_version TEXT NOT NULL,
            features TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (exposure_id, model_version)
        )"""
    )
    db.execute(
        """CREATE TABLE model_upgrades (
            id INTEGER PRIMARY KEY,
            from_models TEXT NOT NULL,
            to_model TEXT NOT NULL,
            stories INTEGER,
            participants INTEGER,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )"""
    )


# (version, description, function). Append only; never edit a released migration.
MIGRATIONS: list[tuple[int, str, Callable[[sqlite_utils.Database], None]]] = [
    (1, "core study tables", _v1_core),
    (2, "free-text answers, answer status, audio paths, match components, indexes", _v2_details),
    (3, "model: story embeddings, participant preference models, learned ratings", _v3_model),
    (4, "invitation attempts as a table (from events), protocols used", _v4_invitations_protocols),
    (5, "model upgrades: the model of each preference model, exposure features per model",
     _v5_model_upgrades),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
