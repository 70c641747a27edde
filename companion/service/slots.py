"""A scheduled slot as the database sees it: shared by the runner and `status`, which must
agree (and `status` must not import the runner, or APScheduler with it)."""

from __future__ import annotations

import sqlite_utils

from companion.service.schedule import Attempt, Slot
from companion.store import queries


def history(db: sqlite_utils.Database, slot: Slot) -> list[Attempt]:
    return [Attempt(at, outcome) for at, outcome in queries.attempt_history(db, slot.key)]


def state(db: sqlite_utils.Database, participant_id: str, slot: Slot, per_day: int) -> str:
    """held / missed / covered (daily quota reached by other sessions) / open."""
    return queries.slot_state(db, participant_id, slot.local_date, slot.start, slot.end, per_day)
