"""The one definition of adherence counts (`companion.store.adherence`) that `status` and the
report share: sessions and days, each day's state by its rules."""

from __future__ import annotations

from datetime import date

from companion.store.adherence import adherence, day_states


def test_day_rules_and_counts():
    rows = [
        ("missed", "2027-03-10"), ("completed", "2027-03-10"),  # held beats missed
        ("interrupted", "2027-03-11"), ("aborted", "2027-03-11"), ("missed", "2027-03-11"),
        ("missed", "2027-03-12"), ("missed", "2027-03-12"),
        # 2027-03-13: nothing scheduled, nothing held
        ("running", "2027-03-14"),
        ("completed", "2027-03-15"), ("completed", "2027-03-15"), ("interrupted", "2027-03-15"),
    ]  # fmt: skip
    states = [s for _, s in day_states(rows)]
    assert states == ["held", "interrupted", "missed", "no record", "interrupted", "held"]
    assert day_states(rows)[0][0] == date(2027, 3, 10)
    counted = adherence(reversed(rows))  # order does not matter
    assert counted.as_dict() == {
        "sessions_completed": 3, "sessions_interrupted": 3, "sessions_missed": 4,
        "sessions_running": 1, "days_observed": 6, "days_held": 2, "days_interrupted": 2,
        "days_missed": 1, "days_no_record": 1,
    }  # fmt: skip
    assert counted.day_rate == 2 / 5


def test_no_sessions():
    counted = adherence([])
    assert counted.days_observed == 0 and counted.day_rate is None
    assert day_states([]) == []
