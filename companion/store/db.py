"""The study database: one SQLite file per home, changed only through versioned migrations.

Researchers' scripts rely on these table and column names (documented in
README.md, "Database schema"). Every answer is committed the moment it is given.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from companion.clock import iso, utc_now
from companion.errors import CompanionError

log = logging.getLogger(__name__)


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


# (version, description, function). Append only; never edit a released migration.
MIGRATIONS: list[tuple[int, str, Callable[[sqlite_utils.Database], None]]] = [
    (1, "core study tables", _v1_core),
    (2, "free-text answers, answer status, audio paths, match components, indexes", _v2_details),
    (3, "model: story embeddings, participant preference models, learned ratings", _v3_model),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


class DatabaseError(CompanionError):
    """The database file is unusable (corrupt, newer schema, not a database)."""


def schema_version(db: sqlite_utils.Database) -> int:
    if "schema_migrations" not in db.table_names():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite_utils.Database, target: int | None = None) -> list[int]:
    """Apply pending migrations in order, each in its own transaction. Returns versions applied."""
    target = SCHEMA_VERSION if target is None else target
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise DatabaseError(
            f"{db_label(db)}: schema version {current} is newer than this companion "
            f"({SCHEMA_VERSION}); update the companion package"
        )
    applied = []
    for version, description, apply in MIGRATIONS:
        if current < version <= target:
            with transaction(db):
                db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT)"
                )
                apply(db)
                db.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    [version, description, iso(utc_now())],
                )
            log.info("applied migration %s: %s", version, description)
            applied.append(version)
    return applied


def db_label(db: sqlite_utils.Database) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] or ":memory:"


def open_db(path: Path, *, create: bool = True, readonly: bool = False) -> sqlite_utils.Database:
    """Open (and migrate) a study database with the durability settings below."""
    if readonly:
        if not path.exists():
            raise DatabaseError(f"{path}: no database here; check --home")
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        return sqlite_utils.Database(conn)
    if not create and not path.exists():
        raise DatabaseError(f"{path}: no database here; check --home or run a session first")
    new = not path.exists()
    if new:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
    # isolation_level=None: we open transactions ourselves (with db.conn / BEGIN).
    conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False, isolation_level=None)
    db = sqlite_utils.Database(conn)
    try:
        # WAL: readers (export, status) never block the session writing answers.
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: each commit is fsynced, so an answer acknowledged to the participant survives
        # a power cut (NORMAL in WAL mode may lose the last transactions).
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=10000")
        migrate(db)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(
            f"{path}: not a usable SQLite database ({exc}); restore a backup"
        ) from exc
    return db


def integrity_ok(db: sqlite_utils.Database) -> tuple[bool, str]:
    rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
    return rows == ["ok"], "; ".join(rows[:5])


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[None]:
    """One atomic, durable write (the connection is in autocommit mode otherwise)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def log_event(
    db: sqlite_utils.Database,
    kind: str,
    detail: str = "",
    *,
    level: str = "info",
    session_id: int | None = None,
    at: datetime | None = None,
) -> None:
    with transaction(db):
        db.execute(
            "INSERT INTO events (ts, level, kind, detail, session_id) VALUES (?, ?, ?, ?, ?)",
            [iso(at or utc_now()), level, kind, detail, session_id],
        )
    getattr(log, "warning" if level == "warning" else "info")("%s %s", kind, detail)


def ensure_participant(
    db: sqlite_utils.Database, participant_id: str, name: str | None, timezone: str
) -> dict[str, Any]:
    with transaction(db):
        db.execute(
            "INSERT INTO participants (id, name, timezone, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, timezone = excluded.timezone",
            [participant_id, name, timezone, iso(utc_now())],
        )
    row = db.execute("SELECT * FROM participants WHERE id = ?", [participant_id]).fetchone()
    columns = [c[0] for c in db.execute("SELECT * FROM participants LIMIT 0").description]
    return dict(zip(columns, row, strict=True))
