"""A controllable world for the service tests: the real APScheduler, stepped on a fake clock.

`SteppedScheduler` is APScheduler's own BaseScheduler (real job store, real triggers,
real misfire handling); only its wait is replaced: instead of sleeping until the next
job, the test moves time-machine's clock there. Jobs run synchronously (DebugExecutor),
so a 30-day study runs in seconds and never waits in real time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from companion import app
from companion.clock import utc_now
from companion.store.db import log_event, open_db
from tests.helpers.world import LONDON, SCHEDULE, World, local, make_home, slot_rows


@pytest.mark.slow  # a month of the real scheduler
def test_thirty_days_each_session_once_held_or_missed(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    expected: dict[tuple[int, int], str] = {}  # (day, window) -> "held" or missed reason
    with time_machine.travel(local(0, 7), tick=False) as traveller:
        world = World(home, traveller)
        world.boot()
        for day in range(30):
            if day == 2:  # three unanswered invitations (1 + 2 reminders): no_answer
                world.invite_script = ["", "", ""]
                expected[(day, 0)] = "no_answer"
            if day == 3:
                world.run_until(local(day, 12))
                world.invite_script = ["not now", "later", "yes"]  # snoozed twice, then held
            if day == 4:
                world.invite_script = ["no thanks"]
                expected[(day, 0)] = "declined"
            if day == 5:  # device off all day
                world.power_off()
                traveller.move_to(local(6, 7, 30))
                expected[(5, 0)] = expected[(5, 1)] = "device_off"
                world.boot()
                continue
            if day == 7:  # power cut before the window, back inside it: still invited
                world.run_until(local(day, 8))
                world.power_off()
                traveller.move_to(local(day, 9, 40))
                world.boot()
            if day == 8:  # power cut before the window, back after it
                world.run_until(local(day, 8, 30))
                world.power_off()
                traveller.move_to(local(day, 11, 30))
                world.boot()
                expected[(day, 0)] = "device_off"
            if day == 9:  # invited, no answer, then the power goes: no_answer, not device_off
                world.invite_script = [""]
                world.run_until(local(day, 9, 5))
                world.power_off()
                traveller.move_to(local(day, 12))
                world.boot()
                expected[(day, 0)] = "no_answer"
            if day == 10:  # the clock jumps forward 1 h into the window: the invitation is late
                world.run_until(local(day, 8, 30))
                traveller.shift(3600)
            if day == 11:  # after the session, the clock jumps back 1 h: no second session
                world.run_until(local(day, 9, 30))
                traveller.shift(-3600)
            if day == 12:  # disk full through the morning window
                world.run_until(local(day, 8))
                world.free = 10 * 1024 * 1024
                world.run_until(local(day, 12))
                world.free = 10**12
                expected[(day, 0)] = "disk_full"
            if day == 14:  # reboot after a clock jump back: waits for the clock, then catches up
                world.run_until(local(day, 12))
                world.power_off()
                traveller.shift(-5 * 3600)
                world.boot()  # clock earlier than the last event: waits (blocking sleep)
            if day == 22:  # the participant walks away mid-session: interrupted, still held
                world.run_until(local(day, 8))
                world.leave_after = 3
            if day == 25:  # "not now" until the evening window closes
                world.run_until(local(day, 17))
                world.invite_script = ["not now"] * 20
                expected[(day, 1)] = "no_answer"
            world.run_until(local(day, 23, 59))
            world.invite_script = []
        world.run_until(local(30, 12))
        service = world.service
        assert service is not None
        db = service.db
        rows = slot_rows(db)

    start_day = datetime(2027, 3, 10).date()
    seen: dict[tuple[int, int], list[tuple[str, str | None, str]]] = {}
    windows = [(9, 11), (18, 20)]
    for local_date, status, reason, started_at, _kind in rows:
        moment = datetime.fromisoformat(started_at).astimezone(LONDON)
        day = (datetime.fromisoformat(local_date).date() - start_day).days
        index = [n for n, (a, b) in enumerate(windows) if a <= moment.hour < b]
        assert index, f"session outside every window: {local_date} {moment} {status}"
        seen.setdefault((day, index[0]), []).append((status, reason, started_at))
    for day in range(30):
        for index in (0, 1):
            got = seen.get((day, index), [])
            assert len(got) == 1, f"day {day} window {index}: {got}"
            status, reason, _ = got[0]
            want = expected.get((day, index), "held")
            outcome = "held" if status != "missed" else reason
            assert outcome == want, f"day {day} window {index}: {got[0]}, expected {want}"
    assert seen[(22, 0)][0][0] == "interrupted"
    assert len(rows) == 60
    # DST (2027-03-28): the morning invitation stays at 09:00 London time on both sides.
    for day in (17, 18, 19):
        started = datetime.fromisoformat(seen[(day, 0)][0][2]).astimezone(LONDON)
        assert (started.hour, started.minute) == (9, 0), started
    assert [n for n in world.notes if n == "WATCHDOG=1"], "heartbeat never pinged"
    assert 1 <= len(list((home / "backups").glob("companion-*.db"))) <= 3
    events = (
        open_db(home / "companion.db")
        .execute("SELECT kind, COUNT(*) FROM events GROUP BY kind")
        .fetchall()
    )
    counts = dict(events)
    assert counts["clock_suspect"] >= 1
    assert counts["disk_low"] >= 1


def test_reboot_inside_window_invites_once_and_manual_session_counts(tmp_path: Path) -> None:
    one_window = SCHEDULE.replace('["09:00-11:00", "18:00-20:00"]', '["09:00-11:00"]')
    home = make_home(tmp_path, one_window)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        world = World(home, traveller)
        service = world.boot()
        traveller.move_to(local(0, 8, 30))
        service.manual_session()  # the participant starts one before the window
        world.run_until(local(0, 23))
        rows = slot_rows(service.db)
    assert [r[1] for r in rows] == ["completed"]  # quota of 1 a day: no invitation, no miss
    assert world.invitations == []


def test_invitations_only_inside_windows_and_outside_quiet_hours(tmp_path: Path) -> None:
    schedule = SCHEDULE.replace('"22:00-07:00"', '"08:00-09:30"').replace(
        "reminders = 2", "reminders = 3"
    )
    home = make_home(tmp_path, schedule)
    with time_machine.travel(local(0, 7), tick=False) as traveller:
        world = World(home, traveller)
        world.boot()
        world.invite_script = ["", "", "", "", "", "", ""]
        world.run_until(local(2, 23))
    times = [t.astimezone(LONDON) for t in world.invitations]
    assert times, "no invitation at all"
    for t in times:
        inside = (9, 30) <= (t.hour, t.minute) < (11, 0) or 18 <= t.hour < 20
        assert inside, t
    assert (times[0].hour, times[0].minute) == (9, 30)  # quiet hours pushed the first one


def test_run_command_starts_a_session_on_a_line_and_stops_cleanly(tmp_path: Path) -> None:
    import os
    import signal
    import socket
    import subprocess
    import sys

    from tests.helpers.run import REPO

    home = make_home(tmp_path)
    app.open_home(home, create=True).db.conn.close()  # what `companion init` does
    sock_path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(sock_path)
    listener.settimeout(20)
    env = {**os.environ, "COMPANION_HOME": str(home), "NOTIFY_SOCKET": sock_path,
           "WATCHDOG_USEC": "400000"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "run"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        messages = [listener.recv(1024).decode() for _ in range(4)]
        assert "READY=1" in messages and "WATCHDOG=1" in messages
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n")  # "start a session now"
        proc.stdin.flush()
        assert proc.stdout.readline().startswith("companion: Hello Robin")
        proc.stdin.write("4\n")
        proc.stdin.flush()
        proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        listener.close()
    db = open_db(home / "companion.db")
    status, reason = db.execute("SELECT status, reason FROM sessions").fetchone()
    assert status == "interrupted" and "end of input" in reason
    kinds = [r[0] for r in db.execute("SELECT kind FROM events ORDER BY id")]
    assert kinds[-1] == "service_stopped" and "service_started" in kinds


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from tests.helpers.run import REPO

    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze missing: run deploy/setup.sh (installs systemd)"
    unit = (REPO / "deploy" / "companion.service").read_text()
    keys = {line.split("=", 1)[0] for line in unit.splitlines() if "=" in line}
    for key in ("Type", "WatchdogSec", "Restart", "StartLimitIntervalSec", "StartLimitBurst",
                "User", "NoNewPrivileges", "ProtectSystem", "ReadWritePaths", "PrivateTmp",
                "IPAddressDeny"):  # fmt: skip
        assert key in keys, key
    assert "Type=notify" in unit and "IPAddressDeny=any" in unit
    # The same unit with paths that exist on this machine.
    local_unit = unit.replace("/opt/companion/.venv/bin/companion",
                              str(REPO / ".venv" / "bin" / "companion"))  # fmt: skip
    local_unit = local_unit.replace("/var/lib/companion", str(tmp_path))
    (tmp_path / "companion.service").write_text(local_unit)
    done = subprocess.run([analyze, "verify", str(tmp_path / "companion.service")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "companion.service" not in done.stderr, done.stderr
    # The check can fail: a misspelt directive is reported.
    (tmp_path / "typo.service").write_text(local_unit.replace("WatchdogSec", "WatchDogSec"))
    bad = subprocess.run([analyze, "verify", str(tmp_path / "typo.service")],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "WatchDogSec" in bad.stderr


def test_damaged_database_is_refused_with_an_event(tmp_path: Path) -> None:
    import sqlite3

    from companion.store.db import DatabaseError

    home = make_home(tmp_path)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        opened = app.open_home(home, create=True)
        log_event(opened.db, "note", "before the damage")
        opened.db.conn.close()
        # An index that no longer matches its table: the file opens, integrity_check fails.
        raw = sqlite3.connect(home / "companion.db", isolation_level=None)
        raw.execute("PRAGMA writable_schema=ON")
        raw.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX events_ts ON events(kind)' "
                    "WHERE name = 'events_ts'")  # fmt: skip
        raw.close()
        world = World(home, traveller)
        with pytest.raises(DatabaseError, match="integrity check failed.*restore a backup"):
            world.boot()
        assert world.scheduler.get_jobs() == []  # nothing was scheduled
    db = open_db(home / "companion.db")
    assert db.execute("SELECT level FROM events WHERE kind = 'integrity_failed'").fetchone() == (
        "error",
    )


def test_clock_before_the_build_date_is_not_trusted(tmp_path: Path) -> None:
    from companion.clock import BUILD_DATE, clock_problem
    from companion.store.queries import last_event_at

    home = make_home(tmp_path)
    db = app.open_home(home, create=True).db
    log_event(db, "probe")
    before = datetime.combine(BUILD_DATE, datetime.min.time(), tzinfo=LONDON) - timedelta(days=1)
    assert "before the build date" in (clock_problem(before, last_event_at(db)) or "")
    assert clock_problem(utc_now() + timedelta(days=1), last_event_at(db)) is None
    assert "earlier than the last database event" in (
        clock_problem(utc_now() - timedelta(hours=1), last_event_at(db)) or ""
    )


def test_an_accepted_invitation_is_stored_as_its_session_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power cut mid-session must not make a scheduled session look started by hand: the
    accepted invitation, linked to its session, is on disk before the session's first question."""
    from companion.engine.protocol import shipped_protocol
    from tests.helpers.world import ScriptedChannel

    home = make_home(tmp_path)
    seen: list[tuple[list, list]] = []
    listen = ScriptedChannel.listen

    def observing(channel: ScriptedChannel, expect):  # type: ignore[no-untyped-def]
        if expect.vocabulary != shipped_protocol().answer_words.invite_vocabulary and not seen:
            db = open_db(home / "companion.db")  # another connection: only what is committed
            running = db.execute("SELECT id FROM sessions WHERE status = 'running'").fetchall()
            stored = db.execute("SELECT outcome, session_id FROM invitations").fetchall()
            db.close()
            seen.append((running, stored))
        return listen(channel, expect)

    monkeypatch.setattr(ScriptedChannel, "listen", observing)
    with time_machine.travel(local(0, 8), tick=False) as traveller:
        world = World(home, traveller)
        service = world.boot()
        world.run_until(local(0, 10))
        after = service.db.execute("SELECT outcome, session_id FROM invitations").fetchall()
    (running, stored), *_ = seen
    assert len(running) == 1
    assert [tuple(r) for r in stored] == [("accepted", running[0][0])]
    assert [tuple(r) for r in after] == [("accepted", running[0][0])]  # stored once, not twice


def test_a_stop_signal_inside_the_pools_lock_still_stops() -> None:
    """The signal handler runs wherever the main thread is: here inside a thread pool's
    non-reentrant lock, the moment a handler that shut the scheduler down waited on itself."""
    import signal

    from tests.helpers.run import run_python

    script = (
        "import os, signal\n"
        "from companion.service.runner import StopRequest, make_scheduler\n"
        "stop = StopRequest()\n"
        "stop.install()\n"
        "scheduler = make_scheduler()\n"
        "scheduler.start()\n"
        "pool = scheduler._executors['default']._pool\n"
        "with pool._shutdown_lock:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    print('handler returned', flush=True)\n"
        "print('woken by', stop.wait(), flush=True)\n"
        "scheduler.shutdown(wait=False)\n"
        "print('stopped', flush=True)\n"
    )
    done = run_python(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "handler returned",
        f"woken by {int(signal.SIGTERM)}",
        "stopped",
    ]


def test_ctrl_c_stops_the_service_cleanly(tmp_path: Path) -> None:
    import os
    import signal
    import socket
    import subprocess
    import sys

    from tests.helpers.run import REPO

    home = make_home(tmp_path)
    app.open_home(home, create=True).db.conn.close()
    sock_path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(sock_path)
    listener.settimeout(60)
    env = {**os.environ, "COMPANION_HOME": str(home), "NOTIFY_SOCKET": sock_path}
    proc = subprocess.Popen([sys.executable, "-m", "companion", "run"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)  # fmt: skip
    try:
        while listener.recv(1024).decode() != "READY=1":
            pass
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        listener.close()
    assert proc.returncode == 0 and "Traceback" not in err, err
    kinds = [r[0] for r in open_db(home / "companion.db").execute("SELECT kind FROM events")]
    assert kinds[-1] == "service_stopped"


def test_a_stop_signal_taken_by_another_thread_wakes_the_main_thread() -> None:
    """The kernel may give a process's signal to any of its threads; the main thread, waiting
    for the stop, must wake all the same."""
    import signal

    from tests.helpers.run import run_python

    script = (
        "import signal, threading\n"
        "from companion.service.runner import StopRequest\n"
        "stop = StopRequest()\n"
        "stop.install()\n"
        "def other():\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)\n"
        "threading.Timer(0.2, other).start()\n"
        "print('woken by', stop.wait(), flush=True)\n"
    )
    done = run_python(script)
    assert (done.returncode, done.stdout) == (0, f"woken by {int(signal.SIGTERM)}\n"), done


def test_a_session_that_does_not_end_on_its_own_does_not_hold_the_stop(tmp_path: Path) -> None:
    """End of input ends a text session; a channel that never hears it (a microphone read
    that does not return) must not keep the service past systemd's stop timeout. Its row is
    left running, and the next start closes it as interrupted."""
    import signal
    import subprocess
    import sys
    import time

    from companion.service.runner import STOP_GRACE_S
    from tests.helpers.run import REPO

    home = make_home(tmp_path)
    app.open_home(home, create=True).db.conn.close()
    script = (
        "import sys, threading\n"
        "from companion import app\n"
        "from companion.service import runner\n"
        "class Stuck:\n"
        "    mode = 'text'\n"
        "    def say(self, text): print('companion:', text, flush=True)\n"
        "    def listen(self, expect): threading.Event().wait()\n"
        "    def close(self): pass\n"
        "runner.serve(app.open_home(sys.argv[1]), sys.stdin, sys.stdout, channel_factory=Stuck)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(home)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n")  # a session now
        proc.stdin.flush()
        assert proc.stdout.readline().startswith("companion: ")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert STOP_GRACE_S <= took < STOP_GRACE_S + 4, took
    status = "SELECT status FROM sessions"
    assert open_db(home / "companion.db").execute(status).fetchone() == ("running",)
    app.open_home(home).db.conn.close()  # the next start
    assert open_db(home / "companion.db").execute(status).fetchone() == ("interrupted",)
