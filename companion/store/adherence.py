"""Adherence, counted once: `companion status` and the report both count with `adherence`.

Counts are over one participant's `sessions` rows, in two units that are always labelled:

- sessions: `completed`; `interrupted` (interrupted or aborted: begun, not finished);
  `missed` (one row per scheduled window that ended without a session); `running` (not
  finished yet: a live session, or one a crash cut off that the service has not yet closed).
- study days, each local date from the participant's first session row to their last: a day
  is *held* if any session that day completed, else *interrupted* if any began (interrupted,
  aborted or running), else *missed* if a scheduled window that day was missed, else it has
  *no record* (no window was scheduled that day, e.g. a weekday the protocol leaves out).

Day adherence is days held over the days that asked something of the participant (held,
interrupted or missed); days with no record do not count against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import date, timedelta

HELD, INTERRUPTED, MISSED, NO_RECORD = "held", "interrupted", "missed", "no record"
DAY_STATES = (HELD, INTERRUPTED, MISSED, NO_RECORD)
BEGUN = ("interrupted", "aborted", "running")  # a session that began and did not complete
RULES = (
    "Counted as `companion status` counts them. Days run from a participant's first session "
    "row to their last: a day is held if a session that day completed, else interrupted if one "
    "began (interrupted, aborted or still running), else missed if a scheduled window was "
    "missed, else it has no record (nothing was scheduled). Sessions: completed; interrupted "
    "or aborted; missed windows; running. Day adherence = days held / (held + interrupted + "
    "missed)."
)


@dataclass(frozen=True)
class Adherence:
    sessions_completed: int = 0
    sessions_interrupted: int = 0  # interrupted + aborted
    sessions_missed: int = 0  # missed windows (rows with status missed)
    sessions_running: int = 0
    days_observed: int = 0  # first to last session row's local date, inclusive
    days_held: int = 0
    days_interrupted: int = 0
    days_missed: int = 0
    days_no_record: int = 0

    @property
    def day_rate(self) -> float | None:
        """Days held over days held, interrupted or missed; None before any such day."""
        asked = self.days_held + self.days_interrupted + self.days_missed
        return self.days_held / asked if asked else None

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _day(value: date | str) -> date:
    return value if isinstance(value, date) else date.fromisoformat(value)


def day_states(rows: Iterable[tuple[str, date | str]]) -> list[tuple[date, str]]:
    """Each day from the first to the last row's local date with its state (module doc).
    `rows` are one participant's (status, local_date) session rows."""
    seen: dict[date, set[str]] = {}
    for status, local_date in rows:
        seen.setdefault(_day(local_date), set()).add(status)
    if not seen:
        return []
    first, last = min(seen), max(seen)
    out = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)
        statuses = seen.get(day, set())
        if "completed" in statuses:
            state = HELD
        elif statuses & set(BEGUN):
            state = INTERRUPTED
        elif "missed" in statuses:
            state = MISSED
        else:
            state = NO_RECORD
        out.append((day, state))
    return out


def adherence(rows: Iterable[tuple[str, date | str]]) -> Adherence:
    """Session and day counts of one participant's (status, local_date) session rows."""
    rows = list(rows)
    statuses = [status for status, _ in rows]
    days = [state for _, state in day_states(rows)]
    return Adherence(
        sessions_completed=statuses.count("completed"),
        sessions_interrupted=statuses.count("interrupted") + statuses.count("aborted"),
        sessions_missed=statuses.count("missed"),
        sessions_running=statuses.count("running"),
        days_observed=len(days),
        days_held=days.count(HELD),
        days_interrupted=days.count(INTERRUPTED),
        days_missed=days.count(MISSED),
        days_no_record=days.count(NO_RECORD),
    )
