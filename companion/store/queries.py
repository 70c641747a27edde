"""Shared questions asked of the study database. The engine, the service, `status`, the model
and the research tools all ask them here, so each has one answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

import sqlite_utils

from companion.clock import iso, utc_now
from companion.store.db import log_event, transaction


def ensure_participant(
    db: sqlite_utils.Database, participant_id: str, name: str | None, timezone: str
) -> dict[str, Any]:
    with transaction(db):
        db.execute(
            "INSERT INTO participants (id, name, timezone, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, timezone = excluded.timezone",
            [participant_id, name, timezone, iso(utc_now())],
        )
    return participant(db, participant_id) or {}


def participant(db: sqlite_utils.Database, participant_id: str) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM participants WHERE id = ?", [participant_id])
    row = cursor.fetchone()
    return dict(zip([c[0] for c in cursor.description], row, strict=True)) if row else None


def completed_sessions(db: sqlite_utils.Database, participant_id: str) -> int:
    return int(
        db.execute(
            "SELECT COUNT(*) FROM sessions WHERE participant_id = ? AND status = 'completed'",
            [participant_id],
        ).fetchone()[0]
    )


def enrolled_at(db: sqlite_utils.Database, participant_id: str) -> datetime | None:
    """When the participant was first seen: the study's day one unless the protocol sets one."""
    row = db.execute(
        "SELECT created_at FROM participants WHERE id = ?", [participant_id]
    ).fetchone()
    return datetime.fromisoformat(row[0]) if row else None


def last_event_at(db: sqlite_utils.Database) -> str | None:
    """The newest event's timestamp: the clock must not be earlier (companion.clock)."""
    return db.execute("SELECT MAX(ts) FROM events").fetchone()[0]


# -- invitations and slots ------------------------------------------------------------------


def attempt_history(db: sqlite_utils.Database, slot_key: str) -> list[tuple[datetime, str]]:
    """(when, outcome) of each invitation of the slot, in order."""
    rows = db.execute(
        "SELECT at, outcome FROM invitations WHERE slot_key = ? ORDER BY attempt", [slot_key]
    ).fetchall()
    return [(datetime.fromisoformat(at), outcome) for at, outcome in rows]


def record_invitation(
    db: sqlite_utils.Database, slot_key: str, outcome: str, at: datetime,
    session_id: int | None = None,
) -> int:  # fmt: skip
    """Store one invitation attempt; returns its number within the slot (1, 2, ...)."""
    with transaction(db):
        row = db.execute(
            "SELECT COALESCE(MAX(attempt), 0) + 1 FROM invitations WHERE slot_key = ?", [slot_key]
        ).fetchone()
        db.execute(
            "INSERT INTO invitations (slot_key, attempt, outcome, at, session_id) "
            "VALUES (?, ?, ?, ?, ?)",
            [slot_key, row[0], outcome, iso(at), session_id],
        )
    return int(row[0])


def slot_state(
    db: sqlite_utils.Database, participant_id: str, local_date: date, start: datetime,
    end: datetime, per_day: int,
) -> str:  # fmt: skip
    """held / missed / covered (daily quota reached by other sessions) / open."""
    row = db.execute(
        "SELECT SUM(status != 'missed' AND started_at >= ? AND started_at < ?), "
        "SUM(status = 'missed' AND started_at = ?), SUM(status != 'missed') "
        "FROM sessions WHERE participant_id = ? AND local_date = ?",
        [iso(start), iso(end), iso(start), participant_id, local_date.isoformat()],
    ).fetchone()
    held, missed, that_day = (int(v or 0) for v in row)
    if held:
        return "held"
    if missed:
        return "missed"
    return "covered" if that_day >= per_day else "open"


def missed_reason(db: sqlite_utils.Database, participant_id: str, start: datetime) -> str | None:
    """The reason recorded on the `missed` row of the slot starting at `start`."""
    row = db.execute(
        "SELECT reason FROM sessions WHERE status = 'missed' AND started_at = ? "
        "AND participant_id = ?",
        [iso(start), participant_id],
    ).fetchone()
    return row[0] if row else None


def recover_interrupted(
    db: sqlite_utils.Database, clock: Callable[[], datetime] = utc_now
) -> list[int]:
    """Close sessions left `running` by a crash or power cut as `interrupted`.

    Call only while holding the session lock, so a live session is never touched.
    """
    ids = [r[0] for r in db.execute("SELECT id FROM sessions WHERE status = 'running'")]
    for session_id in ids:
        with transaction(db):
            # ended_at = the last thing recorded: the real end, not the restart time.
            db.execute(
                "UPDATE sessions SET status = 'interrupted', reason = ?, ended_at = COALESCE("
                "(SELECT MAX(ended_at) FROM turns WHERE session_id = ?), started_at) "
                "WHERE id = ? AND status = 'running'",
                ["companion stopped during the session (crash or power loss)", session_id,
                 session_id],
            )  # fmt: skip
        log_event(db, "session_recovered", "interrupted", level="warning",
                  session_id=session_id, at=clock())  # fmt: skip
    return ids


# -- stories and ratings ----------------------------------------------------------------------


def heard_story_ids(db: sqlite_utils.Database, participant_id: str) -> set[str]:
    """Every story this participant has heard or begun to hear (never read twice)."""
    rows = db.execute(
        "SELECT e.story_id FROM story_exposures e JOIN sessions s ON s.id = e.session_id "
        "WHERE s.participant_id = ?",
        [participant_id],
    )
    return {row[0] for row in rows}


def post_story_rating(
    db: sqlite_utils.Database, session_id: int, instruments: Sequence[str]
) -> float | None:
    """Mean of the answered items of the protocol's post-story instruments."""
    if not instruments:
        return None
    marks = ", ".join("?" * len(instruments))
    row = db.execute(
        "SELECT AVG(value), COUNT(value) FROM self_reports WHERE session_id = ? "
        f"AND instrument IN ({marks}) AND value IS NOT NULL",
        [session_id, *instruments],
    ).fetchone()
    return float(row[0]) if row and row[1] else None


# -- what the companion said and heard on earlier days -------------------------------------------


def companion_said(
    db: sqlite_utils.Database, participant_id: str, since: date
) -> list[tuple[str, str]]:
    """(local_date, text) of the companion's turns to the participant since `since`, story
    readings left out (the bank's text, not the companion's wording)."""
    rows = db.execute(
        "SELECT s.local_date, t.text FROM turns t JOIN sessions s ON s.id = t.session_id "
        "WHERE s.participant_id = ? AND s.local_date >= ? AND t.speaker = 'companion' "
        "AND t.purpose != 'story_reading' ORDER BY t.id",
        [participant_id, since.isoformat()],
    )
    return [(d, text or "") for d, text in rows]


def told_stories(
    db: sqlite_utils.Database, participant_id: str, since: date
) -> list[tuple[int, str, str]]:
    """(session_id, local_date, story) the participant told since `since`, newest first.

    Only sessions where a story was told: a skipped or declined invitation (`story_none`
    turn) or an empty story is not a story.
    """
    rows = db.execute(
        "SELECT s.id, s.local_date, group_concat(t.text, ' ') FROM sessions s "
        "JOIN turns t ON t.session_id = s.id AND t.speaker = 'participant' AND t.purpose = 'story' "
        "WHERE s.participant_id = ? AND s.local_date >= ? AND NOT EXISTS (SELECT 1 FROM turns n "
        "WHERE n.session_id = s.id AND n.purpose = 'story_none') "
        "GROUP BY s.id ORDER BY s.local_date DESC, s.id DESC",
        [participant_id, since.isoformat()],
    )
    return [(sid, d, text.strip()) for sid, d, text in rows if text and text.strip()]


def recalls(db: sqlite_utils.Database, participant_id: str) -> list[tuple[str, int]]:
    """(local_date, recalled session id) of every `story_recalled` event of the participant."""
    rows = db.execute(
        "SELECT s.local_date, e.detail FROM events e JOIN sessions s ON s.id = e.session_id "
        "WHERE e.kind = 'story_recalled' AND s.participant_id = ?",
        [participant_id],
    )
    return [(d, int(detail)) for d, detail in rows if str(detail).isdigit()]
