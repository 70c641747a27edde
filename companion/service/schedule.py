"""The daily plan: when to invite, remind and give up. Pure functions of time, no I/O.

Everything the service does is derived from the protocol's [schedule] table, the
participant's timezone and what the database says already happened, so a restart
recomputes the same plan instead of restoring pickled scheduler state.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from companion.engine import answers
from companion.errors import ConfigError

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MISSED_REASONS = ("declined", "no_answer", "device_off", "error", "disk_full")
Outcome = Literal["accepted", "snoozed", "declined", "no_answer", "error", "busy", "disk_full"]
_SPAN = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True)
class Window:
    start: time
    end: time


@dataclass(frozen=True)
class ScheduleConfig:
    """The [schedule] table. start_date None = the participant's enrolment day."""

    start_date: date | None = None
    days: int = 30
    weekdays: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
    windows: tuple[Window, ...] = (Window(time(18, 0), time(20, 0)),)
    invite: Literal["start", "random"] = "start"
    reminders: int = 2
    reminder_minutes: int = 20
    snooze_minutes: int = 15
    answer_seconds: int = 60
    sessions_per_day: int | None = None  # None = one per window
    quiet_hours: Window | None = None
    backup_time: time = time(3, 30)
    backups_keep: int = 7
    min_free_mb: int = 200
    invitation: str = "Hello {name}, would you like to share a story now?"

    @property
    def max_per_day(self) -> int:
        return self.sessions_per_day or len(self.windows)


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


# -- parsing ------------------------------------------------------------------------------


def _fail(source: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"{source}: schedule.{key}: {problem}")


def _span(text: Any, source: str, key: str) -> Window:
    match = _SPAN.match(text) if isinstance(text, str) else None
    if not match:
        raise _fail(source, key, f'{text!r} must look like "18:00-20:00"')
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2):
        raise _fail(source, key, f"{text!r} is not a valid time range")
    end = time(23, 59, 59) if h2 == 24 else time(h2, m2)
    return Window(time(h1, m1), end)


def _int(table: Mapping[str, Any], source: str, key: str, default: int, low: int, high: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(source, key, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def parse_schedule(table: Mapping[str, Any] | None, source: str) -> ScheduleConfig:
    """Validate the protocol's [schedule] table; a missing table means the defaults."""
    if table is None:
        return ScheduleConfig()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: schedule: must be a table ([schedule])")
    known = {
        "start_date", "days", "weekdays", "windows", "invite", "reminders", "reminder_minutes",
        "snooze_minutes", "answer_seconds", "sessions_per_day", "quiet_hours", "backup_time",
        "backups_keep", "min_free_mb", "invitation",
    }  # fmt: skip
    for key in sorted(set(table) - known):
        raise _fail(source, key, "unknown field; check the spelling")
    start = table.get("start_date")
    if start is not None and not (isinstance(start, date) and not isinstance(start, datetime)):
        raise _fail(source, "start_date", f"must be a date like 2027-03-01, got {start!r}")
    raw_days = table.get("weekdays", list(WEEKDAYS))
    if not isinstance(raw_days, list) or not raw_days or any(d not in WEEKDAYS for d in raw_days):
        raise _fail(source, "weekdays", f"must be a non-empty list of {', '.join(WEEKDAYS)}")
    raw_windows = table.get("windows", ["18:00-20:00"])
    if not isinstance(raw_windows, list) or not raw_windows:
        raise _fail(source, "windows", 'must be a non-empty list like ["09:00-11:00"]')
    windows = sorted((_span(w, source, "windows") for w in raw_windows), key=lambda w: w.start)
    for n, window in enumerate(windows):
        if window.end <= window.start:
            raise _fail(source, "windows", "each window must end after it starts, same day")
        if n and window.start < windows[n - 1].end:
            raise _fail(source, "windows", "windows must not overlap")
    invite = table.get("invite", "start")
    if invite not in ("start", "random"):
        raise _fail(source, "invite", f'must be "start" or "random", got {invite!r}')
    quiet = table.get("quiet_hours")
    per_day = table.get("sessions_per_day")
    backup = _span(f"{table.get('backup_time', '03:30')}-23:59", source, "backup_time").start
    return ScheduleConfig(
        start_date=start,
        days=_int(table, source, "days", 30, 1, 366),
        weekdays=tuple(sorted(WEEKDAYS.index(d) for d in set(raw_days))),
        windows=tuple(windows),
        invite=invite,
        reminders=_int(table, source, "reminders", 2, 0, 10),
        reminder_minutes=_int(table, source, "reminder_minutes", 20, 1, 240),
        snooze_minutes=_int(table, source, "snooze_minutes", 15, 1, 240),
        answer_seconds=_int(table, source, "answer_seconds", 60, 5, 600),
        sessions_per_day=None
        if per_day is None
        else _int(table, source, "sessions_per_day", 1, 1, len(windows)),
        quiet_hours=None if quiet is None else _span(quiet, source, "quiet_hours"),
        backup_time=backup,
        backups_keep=_int(table, source, "backups_keep", 7, 1, 365),
        min_free_mb=_int(table, source, "min_free_mb", 200, 0, 1_000_000),
        invitation=_text(table, source, "invitation", ScheduleConfig.invitation),
    )


def _text(table: Mapping[str, Any], source: str, key: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, key, "must be a non-empty string")
    try:
        value.format(name="x")
    except (KeyError, IndexError, ValueError):
        raise _fail(source, key, "the only placeholder allowed is {name}") from None
    return value


# -- the plan -------------------------------------------------------------------------------


def _at(day: date, moment: time, tz: ZoneInfo) -> datetime:
    # Round trip through UTC so a wall time inside a DST gap lands on a real instant.
    return datetime.combine(day, moment, tzinfo=tz).astimezone(UTC)


def study_days(cfg: ScheduleConfig, enrolled: date) -> list[date]:
    first = cfg.start_date or enrolled
    days = (first + timedelta(days=n) for n in range(cfg.days))
    return [d for d in days if d.weekday() in cfg.weekdays]


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
    if quiet.start <= quiet.end:
        inside, end_day = quiet.start <= now < quiet.end, local.date()
    else:  # wraps midnight, e.g. 22:00-07:00
        inside = now >= quiet.start or now < quiet.end
        end_day = local.date() + timedelta(days=1 if now >= quiet.start else 0)
    return _at(end_day, quiet.end, tz) if inside else None


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


INVITE_YES = frozenset({"yes", "yeah", "yep", "sure", "ok", "okay", "start", "let's go", "ready"})
INVITE_LATER = frozenset({"not now", "later", "maybe later", "in a bit", "snooze", "wait"})
INVITE_NO = frozenset({"no", "nope", "no thanks", "not today", "skip", "decline"})
INVITE_VOCABULARY = tuple(sorted(INVITE_YES | INVITE_LATER | INVITE_NO))


def classify_reply(text: str) -> Outcome:
    """The participant's reply to "Would you like to share a story now?"."""
    tokens = [t for t in answers.normalize(text) if t not in {"please", "um", "uh", "oh", "well"}]
    phrase = " ".join(tokens)
    if not phrase:
        return "no_answer"
    padded = f" {phrase} "
    # "Not now" before "no": a postponement must never be read as a refusal.
    if phrase in INVITE_LATER or any(f" {w} " in padded for w in INVITE_LATER if " " in w):
        return "snoozed"
    if phrase in INVITE_NO or any(f" {w} " in padded for w in INVITE_NO if " " in w):
        return "declined"
    yes_no = answers.parse_yes_no(phrase).value
    if phrase in INVITE_YES or yes_no == 1:
        return "accepted"
    if yes_no == 0:
        return "declined"
    return "no_answer"
