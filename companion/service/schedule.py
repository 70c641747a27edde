"""The daily plan: when to invite, remind and give up. Pure functions of time, no I/O.

Everything the service does is derived from the protocol's [schedule] table (parsed
in `companion.settings.schedule`), the participant's timezone and what the database says
already happened, so a restart recomputes the same plan instead of restoring pickled
scheduler state.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from companion.engine import answers
from companion.settings.schedule import ScheduleConfig

MISSED_REASONS = ("declined", "no_answer", "device_off", "error", "disk_full")
Outcome = Literal["accepted", "snoozed", "declined", "no_answer", "error", "busy", "disk_full"]


@dataclass(frozen=True)
class Slot:
    """One intended session: a window on one study day (UTC-aware start/end)."""

    local_date: date
    index: int
    start: datetime
    end: datetime
    invite_at: datetime

    @property
    def key(self) -> str:
        return f"{self.local_date.isoformat()}#{self.index}"


@dataclass(frozen=True)
class Attempt:
    at: datetime
    outcome: str


# -- the plan -------------------------------------------------------------------------------


def _at(day: date, moment: time, tz: ZoneInfo) -> datetime:
    # Round trip through UTC so a wall time inside a DST gap lands on a real instant.
    return datetime.combine(day, moment, tzinfo=tz).astimezone(UTC)


def study_days(cfg: ScheduleConfig, enrolled: date) -> list[date]:
    return cfg.study_dates(cfg.start_date or enrolled)


def slots_for_day(cfg: ScheduleConfig, day: date, tz: ZoneInfo, seed: int) -> list[Slot]:
    out = []
    for index, window in enumerate(cfg.windows):
        start, end = _at(day, window.start, tz), _at(day, window.end, tz)
        invite = start
        if cfg.invite == "random":
            # Seeded per participant and day: the same offset after every restart.
            digest = hashlib.sha256(f"{seed}:{day.isoformat()}:{index}".encode()).digest()
            latest = max(0, int((end - start).total_seconds()) - 60 * cfg.reminder_minutes)
            invite = start + timedelta(seconds=random.Random(digest).randint(0, latest // 60) * 60)
        out.append(Slot(day, index, start, end, invite))
    return out


def study_slots(cfg: ScheduleConfig, enrolled_at: datetime, tz: ZoneInfo, seed: int) -> list[Slot]:
    """Every intended session of the study. Windows that ended before enrolment are not due."""
    enrolled_day = enrolled_at.astimezone(tz).date()
    slots = []
    for day in study_days(cfg, enrolled_day):
        slots += [s for s in slots_for_day(cfg, day, tz, seed) if s.end > enrolled_at]
    return slots


def in_quiet_hours(cfg: ScheduleConfig, moment: datetime, tz: ZoneInfo) -> datetime | None:
    """If `moment` is in quiet hours, the instant they end; else None."""
    quiet = cfg.quiet_hours
    if quiet is None:
        return None
    local = moment.astimezone(tz)
    now = local.time()
    if not quiet.holds(now):
        return None
    # quiet hours that wrap midnight, entered before it, end tomorrow
    wrapped = quiet.start > quiet.end and now >= quiet.start
    return _at(local.date() + timedelta(days=1 if wrapped else 0), quiet.end, tz)


def unanswered(history: Iterable[Attempt]) -> int:
    return sum(1 for a in history if a.outcome in ("no_answer", "error", "busy"))


def next_attempt(
    cfg: ScheduleConfig, slot: Slot, history: Sequence[Attempt], now: datetime, tz: ZoneInfo
) -> datetime | None:
    """When to (re)invite for this slot, or None when the slot needs no more invitations.

    Misfire policy: an invitation that was due while the device was off happens at once,
    as long as the window is still open long enough to hear the answer.
    """
    if history and history[-1].outcome in ("accepted", "declined", "disk_full"):
        return None
    if unanswered(history) > cfg.reminders:
        return None
    if not history:
        due = slot.invite_at
    else:
        last = history[-1]
        gap = cfg.snooze_minutes if last.outcome == "snoozed" else cfg.reminder_minutes
        due = last.at + timedelta(minutes=gap)
    due = max(due, now, slot.start)
    quiet_end = in_quiet_hours(cfg, due, tz)
    if quiet_end is not None:
        due = quiet_end
    if due + timedelta(seconds=cfg.answer_seconds) > slot.end:
        return None
    return due


def missed_reason(history: Sequence[Attempt]) -> str:
    """Why a slot ended without a session: no invitation at all means the device was off."""
    if not history:
        return "device_off"
    last = history[-1].outcome
    if last in ("declined", "disk_full", "error"):
        return last
    return "no_answer"


def classify_reply(text: str, words: answers.AnswerWords) -> Outcome:
    """The participant's reply to "Would you like to share a story now?", read with the
    protocol's [answers] `words` (the invite_* lists, and a plain yes or no)."""
    tokens = [t for t in answers.normalize(text) if t not in words.invite_ignored]
    phrase = " ".join(tokens)
    if not phrase:
        return "no_answer"
    padded = f" {phrase} "
    # "Not now" before "no": a postponement must never be read as a refusal.
    later, no = words.invite_later, words.invite_no
    if phrase in later or any(f" {w} " in padded for w in later if " " in w):
        return "snoozed"
    if phrase in no or any(f" {w} " in padded for w in no if " " in w):
        return "declined"
    yes_no = answers.parse_yes_no(phrase, words=words).value
    if phrase in words.invite_yes or yes_no == 1:
        return "accepted"
    if yes_no == 0:
        return "declined"
    return "no_answer"
