"""`companion status`: study day, next invitation, today, adherence and warnings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from companion import app
from companion.service.status import audio_problem, compute_status, format_status
from companion.store.adherence import Adherence
from tests.helpers.run import SCRIPT, run_cli, run_text_session
from tests.helpers.world import LONDON, World, local, make_home


def test_status_after_three_study_days(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        world = World(home, traveller)
        world.boot()
        world.invite_script = ["no"]  # day 0 morning declined, evening held
        world.run_until(local(1, 7))
        world.power_off()  # day 1 off: both missed as device_off at the next start
        traveller.move_to(local(2, 9, 30))
        world.boot()  # day 2: morning invitation on boot, held
        world.run_until(local(2, 12))
        opened = app.open_home(home)
        status = compute_status(opened, free_bytes=lambda _p: 10**12, audio=lambda: None)
        low = compute_status(opened, free_bytes=lambda _p: 1024, audio=lambda: "no sound")
        early = compute_status(
            opened, now=datetime(2027, 3, 12, 11, tzinfo=UTC) - timedelta(hours=3),
            free_bytes=lambda _p: 10**12, audio=lambda: None,
        )  # fmt: skip
    assert status.study_day == 3 and status.study_days == 30
    assert status.next_invitation == local(2, 18).isoformat(timespec="minutes")
    assert [(v.window, v.state) for v in status.today] == [
        ("09:00-11:00", "held"), ("18:00-20:00", "upcoming"),
    ]  # fmt: skip
    assert status.adherence["intended_so_far"] == 5  # the keys of earlier versions stay
    assert status.adherence["held"] == 2
    assert status.adherence["missed"] == 3
    assert status.adherence["missed_device_off"] == 2
    assert status.adherence["missed_declined"] == 1
    counted = {k: v for k, v in status.adherence.items() if k.startswith(("sessions_", "days_"))}
    assert counted == {
        "sessions_completed": 2, "sessions_interrupted": 0, "sessions_missed": 3,
        "sessions_missed_device_off": 2, "sessions_missed_declined": 1, "sessions_running": 0,
        "sessions_unscheduled": 0, "days_observed": 3, "days_held": 2, "days_interrupted": 0,
        "days_missed": 1, "days_no_record": 0,
    }  # fmt: skip
    assert status.adherence["scheduled_slots_ended"] == 5
    assert status.last_session is not None and status.last_session["status"] == "completed"
    assert status.warnings == ()
    assert any("disk" in w for w in low.warnings) and "no sound" in low.warnings
    assert any("earlier than the last database event" in w for w in early.warnings)
    text = format_status(status)
    assert "day 3 of 30" in text
    assert "sessions: completed 2, interrupted 0, missed 3 (declined 1, device_off 2)" in text
    assert "study days: 3 from the first session to the last: held 2, interrupted 0" in text
    assert json.loads(status.to_json())["adherence"]["held"] == 2
    assert local(2, 9).astimezone(LONDON).hour == 9


def _snapshot(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(home.iterdir()) if p.is_file()}


def test_status_cli_json_and_audio_check(tmp_path: Path) -> None:
    home = tmp_path / "h"
    missing = run_cli("status", home=home)  # a mistyped --home is not a new study
    assert missing.returncode == 2 and "no companion home here" in missing.stderr
    assert not home.exists()
    assert run_cli("init", home=home).returncode == 0
    before = _snapshot(home)
    done = run_cli("status", "--json", home=home)
    assert done.returncode == 0, done.stderr
    assert _snapshot(home) == before  # read-only: no byte changed, no file (not even -shm) made
    data = json.loads(done.stdout)
    assert data["study_day"] == 1 and data["adherence"]["held"] == 0
    assert data["next_invitation"] is not None
    assert audio_problem(tmp_path / "no-such-dev") is not None
    (tmp_path / "snd").mkdir()
    (tmp_path / "snd" / "pcmC0D0p").touch()
    assert audio_problem(tmp_path / "snd") is None


def report_table(home: Path, out: Path) -> dict[str, int]:
    """The report's adherence row for the home's participant, by column heading."""
    import re

    done = run_cli("report", "--home", str(home), "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    heads = re.findall(r"<th>([^<]*)</th>", page)
    (row,) = re.findall(r"<tr><td>P007</td>(.*?)</tr>", page)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    return {h.replace(" ", "_"): int(c) for h, c in zip(heads[1:], cells, strict=False)
            if c.isdigit()}  # fmt: skip


@pytest.mark.slow  # a scheduled study, status and a report
def test_status_and_report_count_the_same_home_alike(tmp_path: Path) -> None:
    """Sessions and days, held, interrupted and missed, scheduled and by hand: the numbers of
    `status --json` are the report's table, column for column."""
    home = make_home(tmp_path)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        world = World(home, traveller)
        world.boot()
        world.invite_script = ["no"]  # day 0: morning declined, evening held
        world.run_until(local(1, 7))
        world.leave_after = 3  # day 1 morning: the participant walks away
        world.run_until(local(1, 12))
        world.power_off()  # day 1 evening and day 2 morning: device off
        traveller.move_to(local(2, 13))
        world.boot()
        world.run_until(local(2, 14))
        world.power_off()
        traveller.move_to(local(4, 12))
        result, _, _ = run_text_session(home, SCRIPT)  # day 4: by hand, outside a window
        assert result.status == "completed"
        run_text_session(home, SCRIPT[:3])  # and an interrupted one
    done = run_cli("status", "--json", home=home)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)["adherence"]
    table = report_table(home, tmp_path / "report")
    fields = set(Adherence.__dataclass_fields__)
    assert set(table) == fields
    assert table == {k: status[k] for k in fields}
    assert table == {
        "sessions_completed": 2, "sessions_interrupted": 2, "sessions_missed": 3,
        "sessions_running": 0, "days_observed": 5, "days_held": 2, "days_interrupted": 1,
        "days_missed": 1, "days_no_record": 1,
    }  # fmt: skip
    assert status["sessions_unscheduled"] == 2
    assert (status["held"], status["interrupted"], status["missed"]) == (2, 2, 3)


def test_sessions_held_before_the_schedule_are_named(tmp_path: Path) -> None:
    """Sessions by hand before the schedule's first day: 0 scheduled windows have ended, and
    status says the sessions were held outside the schedule (not `intended_so_far 0`)."""
    home = make_home(tmp_path)
    with time_machine.travel(local(-3, 12), tick=False):
        app.open_home(home, create=True).db.conn.close()  # what `companion init` does
        for _ in range(2):
            result, _, _ = run_text_session(home, SCRIPT)
            assert result.status == "completed"
        text = format_status(compute_status(app.open_home(home), audio=lambda: None))
    assert "completed 2" in text
    assert "2 held outside the schedule; 0 scheduled windows ended so far" in text
