"""`companion status`: study day, next invitation, today, adherence and warnings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import time_machine

from companion import app
from companion.service.status import audio_problem, compute_status, format_status
from tests.helpers.run import run_cli
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
    assert status.adherence["intended_so_far"] == 5
    assert status.adherence["held"] == 2
    assert status.adherence["missed"] == 3
    assert status.adherence["missed_device_off"] == 2
    assert status.adherence["missed_declined"] == 1
    assert status.last_session is not None and status.last_session["status"] == "completed"
    assert status.warnings == ()
    assert any("disk" in w for w in low.warnings) and "no sound" in low.warnings
    assert any("earlier than the last database event" in w for w in early.warnings)
    text = format_status(status)
    assert "day 3 of 30" in text and "missed_device_off 2" in text
    assert json.loads(status.to_json())["adherence"]["held"] == 2
    assert local(2, 9).astimezone(LONDON).hour == 9


def _snapshot(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(home.iterdir()) if p.is_file()}


def test_status_cli_json_and_audio_check(tmp_path: Path) -> None:
    home = tmp_path / "h"
    missing = run_cli("status", home=home)  # a mistyped --home is not a new study
    assert missing.returncode == 2 and "no database here" in missing.stderr
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
