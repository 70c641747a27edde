"""The plan as pure functions of time: windows, DST, random offsets, reminders, quiet hours."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.date import DateTrigger

from companion.engine.protocol import default_protocol_text, load_protocol, parse_protocol
from companion.errors import ConfigError
from companion.service.schedule import (
    Attempt,
    classify_reply,
    in_quiet_hours,
    missed_reason,
    next_attempt,
    slots_for_day,
    study_slots,
)
from companion.settings.schedule import ScheduleConfig, Window, parse_schedule

LONDON = ZoneInfo("Europe/London")


def cfg(**kw: object) -> ScheduleConfig:
    return parse_schedule({"windows": ["09:00-11:00"], **kw}, "p.toml")


def test_dst_keeps_local_wall_time_and_changes_utc() -> None:
    c = cfg()
    before = slots_for_day(c, date(2027, 3, 27), LONDON, 1)[0]
    after = slots_for_day(c, date(2027, 3, 28), LONDON, 1)[0]
    assert before.start == datetime(2027, 3, 27, 9, tzinfo=UTC)
    assert after.start == datetime(2027, 3, 28, 8, tzinfo=UTC)  # BST = UTC+1
    assert after.end - after.start == timedelta(hours=2)
    # The real APScheduler trigger fires the invitation at that instant.
    trigger = DateTrigger(after.invite_at)
    fire = trigger.get_next_fire_time(None, datetime(2027, 3, 28, 0, tzinfo=UTC))
    assert fire is not None and fire.astimezone(LONDON).time() == time(9, 0)


def test_window_in_the_spring_gap_lands_on_a_real_instant() -> None:
    c = cfg(windows=["01:30-03:00"])
    slot = slots_for_day(c, date(2027, 3, 28), LONDON, 1)[0]
    assert slot.start.astimezone(LONDON).hour == 2  # 01:30 does not exist that night
    assert slot.end > slot.start


def test_random_offset_is_seeded_inside_the_window_and_leaves_room_for_a_reminder() -> None:
    c = cfg(invite="random", reminder_minutes=30)
    days = [date(2027, 4, 1) + timedelta(days=n) for n in range(40)]
    offsets = []
    for day in days:
        slot = slots_for_day(c, day, LONDON, 42)[0]
        assert slot == slots_for_day(c, day, LONDON, 42)[0]  # same after a restart
        assert slot.start <= slot.invite_at <= slot.end - timedelta(minutes=30)
        offsets.append(slot.invite_at - slot.start)
    assert len(set(offsets)) > 10
    other = [slots_for_day(c, d, LONDON, 43)[0].invite_at - slots_for_day(c, d, LONDON, 43)[0].start
             for d in days]  # fmt: skip
    assert other != offsets


def test_study_dates_weekdays_and_enrolment() -> None:
    c = cfg(start_date=date(2027, 3, 1), days=14, weekdays=["mon", "wed", "fri"])
    slots = study_slots(c, datetime(2027, 3, 1, 11, 30, tzinfo=UTC), LONDON, 1)
    # Enrolled after Monday's window: the first intended session is Wednesday's.
    assert [s.local_date.weekday() for s in slots] == [2, 4, 0, 2, 4]
    assert slots[-1].local_date == date(2027, 3, 12)


def test_reminders_snooze_and_the_window_edge() -> None:
    c = cfg(reminders=2, reminder_minutes=20, snooze_minutes=15, answer_seconds=60)
    slot = slots_for_day(c, date(2027, 5, 3), LONDON, 1)[0]
    t0 = slot.start
    assert next_attempt(c, slot, [], t0 - timedelta(hours=1), LONDON) == t0
    h = [Attempt(t0, "no_answer")]
    assert next_attempt(c, slot, h, t0, LONDON) == t0 + timedelta(minutes=20)
    h.append(Attempt(t0 + timedelta(minutes=20), "snoozed"))
    assert next_attempt(c, slot, h, t0, LONDON) == t0 + timedelta(minutes=35)
    h += [Attempt(t0 + timedelta(minutes=35), "no_answer"), Attempt(t0, "no_answer")]
    assert next_attempt(c, slot, h, t0, LONDON) is None  # 1 + 2 reminders unanswered
    assert next_attempt(c, slot, [Attempt(t0, "declined")], t0, LONDON) is None
    # A reboot late in the window invites at once; too late to hear an answer: nothing.
    late = slot.end - timedelta(minutes=5)
    assert next_attempt(c, slot, [], late, LONDON) == late
    assert next_attempt(c, slot, [], slot.end - timedelta(seconds=30), LONDON) is None


def test_quiet_hours_wrap_midnight_and_push_invitations() -> None:
    c = cfg(windows=["06:00-09:00"], quiet_hours="22:00-07:00")
    slot = slots_for_day(c, date(2027, 5, 3), LONDON, 1)[0]
    assert next_attempt(c, slot, [], slot.start, LONDON) == slot.start + timedelta(hours=1)
    evening = datetime(2027, 5, 3, 23, tzinfo=LONDON)
    assert in_quiet_hours(c, evening, LONDON) == datetime(2027, 5, 4, 7, tzinfo=LONDON)
    assert in_quiet_hours(c, datetime(2027, 5, 3, 12, tzinfo=LONDON), LONDON) is None


def test_missed_reasons() -> None:
    t = datetime(2027, 5, 3, tzinfo=UTC)
    assert missed_reason([]) == "device_off"
    assert missed_reason([Attempt(t, "snoozed")]) == "no_answer"
    assert missed_reason([Attempt(t, "no_answer"), Attempt(t, "error")]) == "error"
    assert missed_reason([Attempt(t, "disk_full")]) == "disk_full"
    assert missed_reason([Attempt(t, "declined")]) == "declined"


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [("yes", "accepted"), ("Yes please", "accepted"), ("sure", "accepted"),
     ("not now", "snoozed"), ("no, not now", "snoozed"), ("maybe later", "snoozed"),
     ("no", "declined"), ("no thanks", "declined"), ("not today", "declined"),
     ("", "no_answer"), ("purple elephant", "no_answer")],
)  # fmt: skip
def test_invitation_replies(reply: str, outcome: str) -> None:
    assert classify_reply(reply, load_protocol().answer_words) == outcome


@pytest.mark.parametrize(
    ("table", "field"),
    [({"windows": ["11:00-09:00"]}, "windows"), ({"windows": ["9-11"]}, "windows"),
     ({"windows": ["09:00-11:00", "10:00-12:00"]}, "windows"), ({"days": 0}, "days"),
     ({"weekdays": ["monday"]}, "weekdays"), ({"invite": "sometimes"}, "invite"),
     ({"reminders": True}, "reminders"), ({"quiet": "22:00-07:00"}, "quiet"),
     ({"invitation": "Hi {nme}"}, "invitation"), ({"start_date": "2027-03-01"}, "start_date")],
)  # fmt: skip
def test_bad_schedule_tables_name_the_field(table: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^p\.toml: schedule\.{field}: "):
        parse_schedule(table, "p.toml")


def test_protocol_carries_its_schedule() -> None:
    text = default_protocol_text() + '\n[schedule]\nwindows = ["10:00-12:00"]\nreminders = 1\n'
    protocol = parse_protocol(text, "custom.toml")
    assert protocol.schedule.windows == (Window(time(10), time(12)),)
    assert protocol.schedule.reminders == 1
    assert parse_protocol(default_protocol_text(), "d").schedule == ScheduleConfig()
    with pytest.raises(ConfigError, match="custom.toml: schedule.reminder: unknown field"):
        parse_protocol(default_protocol_text() + "\n[schedule]\nreminder = 1\n", "custom.toml")
