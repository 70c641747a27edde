"""What the companion remembers of a participant across days, read from the turns table.

Glue between the store and the pure choosers: `variety.PhraseMemory` (which wordings were said
lately) and `recall.choose_recall` (which earlier story to refer back to). Nothing new is stored
for either: the turns are the record, plus one `story_recalled` event naming the session whose
story was recalled.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, datetime, timedelta

import sqlite_utils

from companion.engine.recall import MAX_AGE_DAYS, Recall, choose_recall
from companion.engine.variety import PhraseMemory, Said
from companion.store.db import log_event
from companion.store.queries import companion_said, recalls, told_stories

# How far back the least-recently-said fallback looks; older wordings count as never said.
LOOKBACK_DAYS = 60


def phrase_memory(
    db: sqlite_utils.Database, participant_id: str, today: date, avoid_days: int
) -> PhraseMemory:
    since = today - timedelta(days=max(LOOKBACK_DAYS, avoid_days))
    said = [
        Said((today - date.fromisoformat(day)).days, text)
        for day, text in companion_said(db, participant_id, since)
    ]
    return PhraseMemory(said, avoid_days)


def recall_for(
    db: sqlite_utils.Database, participant_id: str, today: date, rng: random.Random,
    related: Callable[[str, str], float | None] | None = None,
) -> Recall | None:  # fmt: skip
    """Today's recall of an earlier story, or None. Stories told today are never candidates."""
    told = told_stories(db, participant_id, today - timedelta(days=MAX_AGE_DAYS))
    earlier = [t for t in told if date.fromisoformat(t[1]) < today]
    return choose_recall(today, earlier, recalls(db, participant_id), rng, related)


def note_recall(db: sqlite_utils.Database, session_id: int, recall: Recall, at: datetime) -> None:
    log_event(db, "story_recalled", str(recall.session_id), session_id=session_id, at=at)
