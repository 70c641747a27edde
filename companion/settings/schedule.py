"""The protocol's [schedule] table: when the companion invites, reminds and backs up.

Parsed here (through `settings.validate`) into frozen dataclasses; the plan computed from
it (slots, attempts, replies) is `companion.service.schedule`. Times are the participant's
local time (config.toml `timezone`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, time, timedelta
from typing import Any, Literal

from companion.errors import ConfigError
from companion.settings.validate import Table

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
INVITES = ("start", "random")
# A study start outside these years is a typo (2207 for 2027), not a plan.
FIRST_DATE, LAST_DATE = date(2020, 1, 1), date(2100, 12, 31)
_SPAN = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True)
class Window:
    """A span of local wall-clock time; "24:00" as an end is stored as 23:59:59."""

    start: time
    end: time

    def holds(self, moment: time) -> bool:
        """Is `moment` inside the span (start included, end not; one that ends before it
        starts wraps midnight, e.g. 22:00-07:00)?"""
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


@dataclass(frozen=True)
class ScheduleConfig:
    """The [schedule] table. Every field has the value used when the key is left out."""

    # First study day; None = the day the participant is enrolled (first session).
    start_date: date | None = None
    # Study length in days, counted from start_date (1..366).
    days: int = 30
    # Study weekdays, Monday = 0.
    weekdays: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
    # Daily session windows, sorted and not overlapping.
    windows: tuple[Window, ...] = (Window(time(18, 0), time(20, 0)),)
    # Invite at the "start" of a window, or at a "random" minute (seeded per participant/day).
    invite: Literal["start", "random"] = "start"
    # Extra invitations after one goes unanswered (0..10).
    reminders: int = 2
    # Minutes between an unanswered invitation and the next (1..240).
    reminder_minutes: int = 20
    # Minutes to wait after "not now" (1..240).
    snooze_minutes: int = 15
    # Seconds to wait for an answer to the invitation (5..600).
    answer_seconds: int = 60
    # Sessions per day; None = one per window.
    sessions_per_day: int | None = None
    # Never invite inside these hours (may wrap midnight); None = no quiet hours.
    quiet_hours: Window | None = None
    # Daily database backup time.
    backup_time: time = time(3, 30)
    # Daily backups kept (1..365).
    backups_keep: int = 7
    # Below this much free disk (MB): no session, a `missed` row instead.
    min_free_mb: int = 200
    # The invitation's wording as files before [prompts] invitation set it here; None: the
    # protocol's [prompts] invitation (the shipped wording is the default protocol's).
    invitation: str | None = None

    def study_dates(self, first: date) -> list[date]:
        """The study days from `first` (start_date, else the enrolment day): `days` dates on
        one of `weekdays`."""
        dates = (first + timedelta(days=n) for n in range(self.days))
        return [d for d in dates if d.weekday() in self.weekdays]

    @property
    def max_per_day(self) -> int:
        return self.sessions_per_day or len(self.windows)


def parse_schedule(table: Mapping[str, Any] | None, source: str) -> ScheduleConfig:
    """Validate the protocol's [schedule] table; a missing table means the defaults."""
    if table is None:
        return ScheduleConfig()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: schedule: must be a table ([schedule])")
    t = Table(table, source, "schedule.")
    values = t.read({
        "start_date": lambda k: t.day(k, FIRST_DATE, LAST_DATE),
        "days": lambda k: t.integer(k, 1, 366),
        "weekdays": lambda k: _weekdays(t.strings(k, allowed=WEEKDAYS)),
        "windows": lambda k: _windows(t, k),
        "invite": lambda k: t.choice(k, INVITES),
        "reminders": lambda k: t.integer(k, 0, 10),
        "reminder_minutes": lambda k: t.integer(k, 1, 240),
        "snooze_minutes": lambda k: t.integer(k, 1, 240),
        "answer_seconds": lambda k: t.integer(k, 5, 600),
        "sessions_per_day": lambda k: t.integer(k, 1, 24),
        "quiet_hours": lambda k: span(t, k, t.text(k)),
        "backup_time": lambda k: t.clock_time(k),
        "backups_keep": lambda k: t.integer(k, 1, 365),
        "min_free_mb": lambda k: t.integer(k, 0, 1_000_000),
        "invitation": lambda k: t.template(k, t.text(k), {"name"}),
    })  # fmt: skip
    config = ScheduleConfig(**values)
    if config.sessions_per_day is not None and config.sessions_per_day > len(config.windows):
        raise t.fail(
            "sessions_per_day",
            f"must be from 1 to {len(config.windows)} (one session per window at most)",
        )
    never_invites(config, t)
    return config


def never_invites(config: ScheduleConfig, t: Table) -> None:
    """Refuse a schedule under which the companion could never invite: no study weekday in
    the study's dates, or quiet hours (and the answer time) leaving no moment in any window.
    Local wall-clock arithmetic, as the plan (`companion.service.schedule`) uses it."""
    if config.start_date is not None and not config.study_dates(config.start_date):
        last = config.start_date + timedelta(days=config.days - 1)
        raise t.fail("weekdays", f"none of them falls between start_date "
                     f"{config.start_date} and {last} ({config.days} study days), so the "
                     "companion would never invite; add a weekday or more days")  # fmt: skip

    def open_in(quiet: Window | None) -> bool:
        return any(_can_invite(w, quiet, config.answer_seconds) for w in config.windows)

    if not open_in(None):
        raise t.fail("windows", f"every window is shorter than answer_seconds "
                     f"({config.answer_seconds} s), so the companion would never invite; "
                     "lengthen a window")  # fmt: skip
    if not open_in(config.quiet_hours):
        raise t.fail("quiet_hours", "they cover every window (leaving less than answer_seconds "
                     "of any), so the companion would never invite; shorten quiet_hours or "
                     "move the windows")  # fmt: skip


def _seconds(moment: time) -> int:
    return moment.hour * 3600 + moment.minute * 60 + moment.second


def _can_invite(window: Window, quiet: Window | None, answer_seconds: int) -> bool:
    """Whether some invitation in `window` is outside `quiet` with time left to answer: the
    earliest one is at the window's start, or where quiet hours end if they hold the start."""
    start = _seconds(window.start)
    if quiet is not None and quiet.holds(window.start):
        # quiet hours that end after midnight leave nothing of this window
        start = _seconds(quiet.end) if window.start < quiet.end else 24 * 3600
    return start + answer_seconds <= _seconds(window.end)


def span(t: Table, key: str, text: str) -> Window:
    match = _SPAN.match(text)
    if not match:
        raise t.fail(key, f'{text!r} must look like "18:00-20:00"')
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2):
        raise t.fail(key, f"{text!r} is not a valid time range")
    end = time(23, 59, 59) if h2 == 24 else time(h2, m2)
    return Window(time(h1, m1), end)


def _weekdays(names: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(sorted({WEEKDAYS.index(name) for name in names}))


def _windows(t: Table, key: str) -> tuple[Window, ...]:
    texts = t.strings(key)
    windows = sorted((span(t, key, w) for w in texts), key=lambda w: w.start)
    for n, window in enumerate(windows):
        if window.end <= window.start:
            raise t.fail(key, "each window must end after it starts, on the same day")
        if n and window.start < windows[n - 1].end:
            raise t.fail(key, "windows must not overlap")
    return tuple(windows)
