"""Time: UTC timestamps as stored, and the one rule for when the clock cannot be trusted.

A Pi has no real-time clock: after a power cut it may boot in 1970 or at the last
shutdown until NTP answers. The service waits and `doctor` fails on the same rule.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

# A clock earlier than this cannot be right (no RTC after a power cut): wait, don't schedule.
BUILD_DATE = date(2026, 11, 1)
# Older than the newest stored event by more than this: the clock went back.
CLOCK_TOLERANCE = timedelta(minutes=2)


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """UTC ISO 8601 with milliseconds, e.g. 2026-11-29T16:05:07.123+00:00."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def clock_problem(now: datetime, last_event: str | None) -> str | None:
    """Why `now` cannot be trusted (before the build date, or earlier than the newest stored
    event `last_event`, an ISO timestamp), or None when it is plausible."""
    if now.astimezone(UTC).date() < BUILD_DATE:
        return f"clock {iso(now)} is before the build date {BUILD_DATE}"
    if last_event and now < datetime.fromisoformat(last_event) - CLOCK_TOLERANCE:
        return f"clock {iso(now)} is earlier than the last database event {last_event}"
    return None
