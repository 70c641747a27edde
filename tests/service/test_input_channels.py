"""`companion run --input FIFO` (the text channel of a service with no terminal, as in the
field rehearsal) and `init --input-device/--output-device` (ALSA names set at provisioning)."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.helpers.run import REPO, SCRIPT, one_error_line, run_cli

# Offsets from UTC that put some zone in daytime at every hour of the day.
ZONES = ("Europe/London", "America/New_York", "America/Los_Angeles", "Europe/Moscow",
         "Asia/Tokyo", "Pacific/Auckland")  # fmt: skip


def daytime_zone(now: datetime) -> str:
    """A participant timezone where it is 09:00-18:59 at `now`: a 90-minute window that starts
    now then lies inside the local day, before the default quiet hours, whenever the test runs
    (with London alone it failed every evening after 21:00)."""
    return next(z for z in ZONES if 9 <= now.astimezone(ZoneInfo(z)).hour < 19)


TZ = daytime_zone(datetime.now(ZoneInfo("UTC")))


def window_from_now() -> str:
    now = datetime.now(ZoneInfo(TZ))
    return f"{now:%H:%M}-{now + timedelta(minutes=90):%H:%M}"


def test_some_zone_is_in_daytime_at_every_hour() -> None:
    start = datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC"))
    for hours in range(0, 366 * 24, 7):  # every hour of the day, through a year of DST changes
        now = start + timedelta(hours=hours, minutes=30)
        assert 9 <= now.astimezone(ZoneInfo(daytime_zone(now))).hour < 19


def protocol_with_window(path: Path) -> Path:
    text = (REPO / "companion" / "data" / "default_protocol.toml").read_text()
    path.write_text(text + f'\n[schedule]\nwindows = ["{window_from_now()}"]\nreminders = 0\n')
    return path


def wait(predicate, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def count(db: Path, sql: str) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_run_reads_a_fifo_that_writers_open_and_close(tmp_path):
    home = tmp_path / "home"
    protocol = protocol_with_window(tmp_path / "p.toml")
    done = run_cli("init", "--home", str(home), "--participant", "P009", "--timezone", TZ,
                   "--name", "Ada", "--protocol", str(protocol))  # fmt: skip
    assert done.returncode == 0, done.stderr
    fifo = tmp_path / "participant"
    out = (tmp_path / "out.txt").open("w")
    service = subprocess.Popen(
        [sys.executable, "-m", "companion", "run", "--home", str(home), "--input", str(fifo)],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        text=True,
    )
    try:
        assert wait(lambda: fifo.exists() and "share a story" in Path(out.name).read_text())
        assert stat.S_ISFIFO(fifo.stat().st_mode) and stat.S_IMODE(fifo.stat().st_mode) == 0o600
        db = home / "companion.db"
        # Each write opens and closes the FIFO: the service must not see end of input.
        for line in ["yes", *SCRIPT]:
            with fifo.open("w") as w:
                w.write(line + "\n")
        assert wait(lambda: count(db, "SELECT COUNT(*) FROM sessions WHERE status = 'completed'"))
        assert count(db, "SELECT COUNT(*) FROM self_reports WHERE status = 'answered'") == 10
        # The invitation row is written once the session it started has ended: wait for it.
        accepted = "SELECT COUNT(*) FROM invitations WHERE outcome = 'accepted' AND session_id"
        assert wait(lambda: count(db, accepted) == 1)
        # Still listening after the writers went away: an empty line starts a session by hand.
        with fifo.open("w") as w:
            w.write("\n")
        assert wait(lambda: count(db, "SELECT COUNT(*) FROM sessions WHERE status = 'running'"))
        assert service.poll() is None
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
        out.close()
    # The session cut by the stop is closed as interrupted; the completed one stays.
    db = home / "companion.db"
    assert count(db, "SELECT COUNT(*) FROM sessions WHERE status = 'interrupted'") == 1
    assert count(db, "SELECT COUNT(*) FROM sessions WHERE status = 'completed'") == 1


def test_init_names_the_audio_devices(tmp_path):
    home = tmp_path / "home"
    done = run_cli("init", "--home", str(home), "--participant", "P010", "--timezone", TZ,
                   "--input-device", "USB PnP Sound Device: Audio (hw:1,0)",
                   "--output-device", "bcm2835 Headphones")  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = (home / "config.toml").read_text()
    assert 'input_device = "USB PnP Sound Device: Audio (hw:1,0)"' in config
    assert 'output_device = "bcm2835 Headphones"' in config
    # A later init without the options keeps them; with one, changes only that one.
    assert run_cli("init", "--home", str(home), "--output-device", "hifiberry").returncode == 0
    config = (home / "config.toml").read_text()
    assert 'input_device = "USB PnP Sound Device: Audio (hw:1,0)"' in config
    assert 'output_device = "hifiberry"' in config
    assert os.stat(home / "config.toml").st_mode & 0o077 == 0


def test_init_refuses_an_empty_device_name_before_writing(tmp_path):
    home = tmp_path / "home"
    assert run_cli("init", "--home", str(home), "--participant", "P011",
                   "--timezone", TZ).returncode == 0  # fmt: skip
    before = (home / "config.toml").read_bytes()
    done = run_cli("init", "--home", str(home), "--input-device", "")
    assert done.returncode == 2
    assert "--input-device" in one_error_line(done)
    assert (home / "config.toml").read_bytes() == before
