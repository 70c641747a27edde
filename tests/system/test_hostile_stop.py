"""SIGTERM at random moments of a real `companion run` (issue 30): every stop must end the
process within STOP_LIMIT_S, exit 0, leave no session `running`, and keep every answer the
companion acknowledged.

Each trial is the real CLI in its own process on a copy of one study home. A time-machine
clock (ticking at real speed) starts the service just before or inside a study window, so
the daily invitation comes as soon as it is ready; a 1 ms heartbeat (WATCHDOG_USEC) keeps
the scheduler submitting jobs all the time, the moments a stop used to hang in. Trials run
a few at a time. COMPANION_STOPS sets the number of the long run (default 200).
"""

from __future__ import annotations

import os
import queue
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
import time_machine

from companion import app
from tests.helpers.run import REPO, SCRIPT
from tests.helpers.world import local, make_home

STOP_LIMIT_S = 5.0
STOPS = int(os.environ.get("COMPANION_STOPS", "200"))
QUIET_S = 0.15
MODES = ("start-up", "idle", "invitation", "session")
# The child: the CLI exactly as `python -m companion run`, on a clock set to HOSTILE_START.
# It says when the start-up handler is in place, so no signal lands before Python runs
# any of the companion (then the default action, not the companion, would decide).
CHILD = """
import os, socket, sys
from datetime import datetime
import time_machine
time_machine.travel(datetime.fromisoformat(os.environ["HOSTILE_START"]), tick=True).start()
sys.argv = ["companion", "run"]
import companion.cli
with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
    s.connect(os.environ["NOTIFY_SOCKET"])
    s.sendall(b"X-HANDLER=1")
companion.cli.main()
"""


@dataclass
class Trial:
    n: int
    mode: str
    rc: int | None = None
    stop_s: float = 0.0
    sent_at: str = ""  # "start-up" or "running": when the signal went
    replies: list[str] = field(default_factory=list)
    acknowledged: int = 0
    stderr: str = ""
    hung: bool = False
    ready_s: float = 0.0  # from the handler's note to READY


@pytest.fixture
def template(tmp_path: Path) -> Path:
    with time_machine.travel(local(0, 7), tick=False):
        (tmp_path / "t").mkdir()
        home = make_home(tmp_path / "t")
        app.open_home(home, create=True).db.conn.close()  # what `companion init` does
    return home


def _lines(stream: object, into: queue.Queue[tuple[float, str]]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        into.put((time.monotonic(), line.rstrip("\n")))


class Notes:
    """The child's sd_notify datagrams, read as they come: a 1 ms heartbeat would otherwise fill
    the socket's queue, and a full queue blocks the sender.

    The reader thread ends before the socket closes: a reader still in recv() on a closed
    socket's number would read from whichever later trial's socket took that number (and
    steal its READY)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.1)  # the reader looks at `closing` this often
        self.seen: set[str] = set()
        self.changed = threading.Condition()
        self.closing = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while not self.closing.is_set():
            try:
                message = self.sock.recv(1024).decode()
            except TimeoutError:
                continue
            if message not in self.seen:
                with self.changed:
                    self.seen.add(message)
                    self.changed.notify_all()

    def wait_for(self, message: str, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: message in self.seen, timeout)

    def close(self) -> None:
        self.closing.set()
        self.reader.join()
        self.sock.close()


def _quiet_line(lines: queue.Queue[tuple[float, str]], deadline: float) -> bool:
    """Wait for the companion to say something, then to stop talking for a moment (it may say
    several lines before it listens). False if it said nothing before `deadline`."""
    said = False
    while (left := deadline - time.monotonic()) > 0:
        try:
            _, line = lines.get(timeout=min(left, QUIET_S) if said else left)
        except queue.Empty:
            if said:
                return True
            continue
        said = said or line.startswith("companion: ")
    return False


def _converse(proc: subprocess.Popen[str], lines: queue.Queue[tuple[float, str]],
              trial: Trial, rng: random.Random) -> None:  # fmt: skip
    """Say yes to the invitation, then give a random number of answers. An answer is
    acknowledged once the companion spoke after it."""
    assert proc.stdin is not None
    answers = SCRIPT[: rng.randint(0, len(SCRIPT))]
    deadline = time.monotonic() + 60
    for n, reply in enumerate(["yes", *answers]):
        if not _quiet_line(lines, deadline):
            return
        trial.acknowledged = len(trial.replies)
        proc.stdin.write(reply + "\n")
        proc.stdin.flush()
        if n:
            trial.replies.append(reply)
    if rng.random() < 0.7 and _quiet_line(lines, deadline):  # else: stop while it hears
        trial.acknowledged = len(trial.replies)


def run_trial(n: int, template: Path, work: Path, seed: int) -> Trial:
    rng = random.Random(seed * 1000 + n)
    trial = Trial(n, MODES[n % len(MODES)])
    home = work / f"home{n}"
    shutil.copytree(template, home)
    sock_path = str(work / f"notify{n}.sock")
    notes = Notes(sock_path)
    # 08:00 is outside every window (the service only waits); 09:00 is a window's start.
    start = local(0, 8) if trial.mode == "idle" else local(0, 9)
    env = {**os.environ, "COMPANION_HOME": str(home), "NOTIFY_SOCKET": sock_path,
           "WATCHDOG_USEC": "2000", "HOSTILE_START": start.isoformat(),
           "PYTHONFAULTHANDLER": "1"}  # fmt: skip
    err = work / f"stderr{n}"
    with err.open("w") as err_file:  # a file: a full stderr pipe would block the child's logging
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=err_file, text=True, env=env, cwd=REPO,
        )  # fmt: skip
    lines: queue.Queue[tuple[float, str]] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        assert notes.wait_for("X-HANDLER=1", 60), "the child never started"
        if trial.mode == "start-up":
            # Anywhere from the handler's installation to a little after READY.
            time.sleep(rng.uniform(0, 1.5))
        else:
            began = time.monotonic()
            if not notes.wait_for("READY=1", 60):
                proc.send_signal(signal.SIGABRT)  # faulthandler: where start-up stood
                proc.wait(timeout=15)
                raise AssertionError(
                    "companion run never got ready:\n" + err.read_text(errors="replace")[-6000:]
                )
            trial.ready_s = time.monotonic() - began
            if trial.mode == "session":
                _converse(proc, lines, trial, rng)
                time.sleep(rng.choice([0.0, rng.uniform(0, 0.005), rng.uniform(0, 0.05)]))
            else:
                time.sleep(rng.uniform(0, 0.6))
        # READY before the signal: the service was running.
        trial.sent_at = "running" if "READY=1" in notes.seen else "start-up"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_LIMIT_S)
        except subprocess.TimeoutExpired:
            trial.hung = True
            proc.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack on stderr
            proc.wait(timeout=15)
        trial.stop_s = time.monotonic() - sent
        trial.rc = proc.returncode
    finally:
        proc.kill()
        proc.wait()
        notes.close()
        trial.stderr = err.read_text(errors="replace")
    return trial


def check_home(home: Path, trial: Trial) -> None:
    conn = sqlite3.connect(f"file:{home / 'companion.db'}?mode=ro", uri=True)
    try:
        statuses = [r[0] for r in conn.execute("SELECT status FROM sessions")]
        assert "running" not in statuses, (trial, statuses)
        stored = [
            r[0]
            for r in conn.execute(
                "SELECT text FROM turns WHERE speaker = 'participant' ORDER BY session_id, seq"
            )
        ]
        # Every acknowledged answer is there, in order, and nothing that was never sent.
        assert stored == trial.replies[: len(stored)], (trial, stored)
        assert len(stored) >= trial.acknowledged, (trial, stored)
        if trial.replies and len(stored) < len(SCRIPT):
            assert statuses == ["interrupted"], (trial, statuses)
        kinds = [r[0] for r in conn.execute("SELECT kind FROM events ORDER BY id")]
        if trial.sent_at == "running":  # a stop after READY winds down and says so
            assert kinds[-1] == "service_stopped", (trial, kinds[-5:])
    finally:
        conn.close()


def stop_trials(template: Path, work: Path, count: int, seed: int) -> list[Trial]:
    with ThreadPoolExecutor(4) as pool:
        trials = list(pool.map(lambda n: run_trial(n, template, work, seed), range(count)))
    hung = [t for t in trials if t.hung]
    worst = max(t.stop_s for t in trials if not t.hung) if len(hung) < count else 0.0
    by_mode = {m: sum(t.mode == m for t in trials) for m in MODES}
    for trial in hung:  # where the main thread waited: the innermost frame of its stack
        stack = trial.stderr.split("Current thread", 1)[-1].splitlines()
        print(f"hung ({trial.mode}): {next((x.strip() for x in stack if 'File' in x), '?')}")
    print(
        f"\nhostile stop: {count} trials {by_mode}, {count - len(hung)} stopped within "
        f"{STOP_LIMIT_S:.0f} s, {len(hung)} hung, worst stop {worst:.2f} s, "
        f"slowest start {max(t.ready_s for t in trials):.1f} s"
    )
    assert not hung, f"{len(hung)} of {count} stops hung; the first's threads:\n" + (
        hung[0].stderr[-6000:] if hung else "")  # fmt: skip
    for trial in trials:
        assert trial.rc == 0, (trial.rc, trial.stderr[-3000:])
        assert "Traceback" not in trial.stderr, trial.stderr[-3000:]
        check_home(work / f"home{trial.n}", trial)
    # The stops must have landed where they mean to, or the harness tests nothing.
    sessions = [t for t in trials if t.mode == "session"]
    assert sum(t.acknowledged > 0 for t in sessions) >= len(sessions) // 2
    assert any(t.sent_at == "start-up" for t in trials)
    return trials


def test_sigterm_at_random_moments_stops_promptly(tmp_path: Path, template: Path) -> None:
    stop_trials(template, tmp_path, 52, seed=30)


@pytest.mark.slow  # 200 stops of a real service
def test_two_hundred_sigterms_all_stop_promptly(tmp_path: Path, template: Path) -> None:
    stop_trials(template, tmp_path, STOPS, seed=31)


def test_a_trial_is_the_companion_the_clock_put_in_a_window(tmp_path: Path,
                                                             template: Path) -> None:  # fmt: skip
    """The harness's clock works: the service started at a window's start invites at once."""
    trial = run_trial(3, template, tmp_path, seed=0)  # n % 4 == 3: a session
    assert trial.mode == "session" and trial.rc == 0, trial
    conn = sqlite3.connect(tmp_path / "home3" / "companion.db")
    at = conn.execute("SELECT at FROM invitations").fetchone()[0]
    conn.close()
    assert local(0, 9) <= datetime.fromisoformat(at) < local(0, 9, 1), at
