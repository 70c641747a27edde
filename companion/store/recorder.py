"""What a session records, one method per fact: the session's row, each turn, each answer,
the story exposure and the session's events.

The session engine (`engine.session`) and the service's missed windows record through a
`Recorder` and never write SQL themselves. Every method is its own transaction, committed
before it returns, so whatever the session goes on to say after it survives a kill or power
cut. Methods take plain values (ids, texts, times), never engine objects.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime

import sqlite_utils

from companion.clock import iso
from companion.store.db import log_event, transaction


class Recorder:
    """Writes one home's session facts to its database (`db`, which readers share)."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    def session_started(
        self, participant_id: str, protocol_id: str, protocol_version: int, kind: str,
        mode: str, started_at: datetime, timezone: str, local_date: date,
    ) -> int:  # fmt: skip
        """The session's `running` row, then its `session_started` event; returns its id."""
        with transaction(self.db):
            cursor = self.db.execute(
                "INSERT INTO sessions (participant_id, protocol_id, protocol_version, kind, "
                "mode, status, started_at, timezone, local_date) "
                "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                [participant_id, protocol_id, protocol_version, kind, mode, iso(started_at),
                 timezone, local_date.isoformat()],
            )  # fmt: skip
        session_id = int(cursor.lastrowid or 0)
        log_event(self.db, "session_started", f"kind={kind}", session_id=session_id)
        return session_id

    def session_ended(
        self, session_id: int, status: str, reason: str | None, ended_at: datetime
    ) -> None:
        """The session's final status, then its `session_<status>` event."""
        with transaction(self.db):
            self.db.execute(
                "UPDATE sessions SET status = ?, reason = ?, ended_at = ? WHERE id = ?",
                [status, reason, iso(ended_at), session_id],
            )
        log_event(self.db, f"session_{status}", reason or "", session_id=session_id)

    def turn(
        self, session_id: int, seq: int, speaker: str, purpose: str, text: str,
        started_at: datetime, ended_at: datetime, confidence: float | None = None,
        audio_path: str | None = None,
    ) -> None:  # fmt: skip
        with transaction(self.db):
            self.db.execute(
                "INSERT INTO turns (session_id, seq, speaker, purpose, text, started_at, ended_at, "
                "asr_confidence, audio_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [session_id, seq, speaker, purpose, text, iso(started_at), iso(ended_at),
                 confidence, audio_path],
            )  # fmt: skip

    def answer(
        self, session_id: int, instrument: str, item: str, value: int | None,
        value_text: str | None, raw_answer: str, attempts: int, answered_at: datetime,
        status: str,
    ) -> None:  # fmt: skip
        with transaction(self.db):
            self.db.execute(
                "INSERT INTO self_reports (session_id, instrument, item, value, value_text, "
                "raw_answer, attempts, answered_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [session_id, instrument, item, value, value_text, raw_answer, attempts,
                 iso(answered_at), status],
            )  # fmt: skip

    def exposure(
        self, session_id: int, story_id: str, condition: str, story_condition: str,
        score: float | None, rank: int | None, components: str, exposed_at: datetime,
    ) -> None:  # fmt: skip
        """A story chosen for reading (`components`: its score's parts, as JSON)."""
        with transaction(self.db):
            self.db.execute(
                "INSERT INTO story_exposures (session_id, story_id, condition, story_condition, "
                "match_score, rank, components, exposed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [session_id, story_id, condition, story_condition, score, rank, components,
                 iso(exposed_at)],
            )  # fmt: skip

    def event(
        self, kind: str, detail: str = "", *, level: str = "info",
        session_id: int | None = None, at: datetime | None = None,
    ) -> None:  # fmt: skip
        log_event(self.db, kind, detail, level=level, session_id=session_id, at=at)

    def missed(
        self, still_open: Callable[[], bool], participant_id: str, protocol_id: str,
        protocol_version: int, reason: str, start: datetime, end: datetime, timezone: str,
        local_date: date,
    ) -> int | None:  # fmt: skip
        """A scheduled window that ended without a session: its `missed` row. `still_open`
        is asked inside the write transaction (another process may have just started a
        session); None, and nothing written, when it says no. Returns the row's id."""
        with transaction(self.db):
            if not still_open():
                return None
            cursor = self.db.execute(
                "INSERT INTO sessions (participant_id, protocol_id, protocol_version, kind, mode, "
                "status, reason, started_at, ended_at, timezone, local_date) "
                "VALUES (?, ?, ?, 'daily', 'text', 'missed', ?, ?, ?, ?, ?)",
                [participant_id, protocol_id, protocol_version, reason, iso(start), iso(end),
                 timezone, local_date.isoformat()],
            )  # fmt: skip
        return int(cursor.lastrowid or 0)
