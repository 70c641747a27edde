"""`companion run`: the always-on service that invites the participant every study day.

Nothing is restored from a job store: on every start the plan is recomputed from the
protocol's [schedule] and the database (sessions held, `missed` rows, the `invitations`
table), so a reboot or crash can neither lose a session nor hold one twice.
All plan jobs run one at a time on a single worker; the heartbeat job, the only
thing that pings systemd's watchdog, runs on its own worker. The scheduler runs on its own
thread; the main thread only waits for SIGTERM/SIGINT and then stops everything.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time as _time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from companion import clock, files
from companion.clock import utc_now
from companion.engine.context import Opened
from companion.engine.dialogue import Channel, EndOfInput, Expectation
from companion.engine.match import LexicalMatcher
from companion.engine.record import record_protocol
from companion.engine.session import StoryChooser, run_session
from companion.errors import SessionBusyError
from companion.service import schedule, slots
from companion.service.schedule import Slot
from companion.service.terminal import LineInbox
from companion.store import backup, queries
from companion.store.db import DatabaseError, integrity_ok, log_event
from companion.store.lock import session_lock

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
# Jobs check their own window, so a late job must still run (APScheduler's default grace is 1 s).
JOB_DEFAULTS = {"misfire_grace_time": None, "coalesce": True, "max_instances": 1}
# After a stop, how long a running job may take to wind down before the process ends anyway
# (inside systemd's TimeoutStopSec). A text session ends at once; a voice session may be
# inside a listen: its row is closed as interrupted at the next start, answers kept.
STOP_GRACE_S = 3.0


def sd_notify(message: str) -> bool:
    """Send one sd_notify(3) datagram to systemd; a no-op outside a Type=notify unit."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # abstract namespace socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(message.encode())
    return True


def heartbeat_interval(default: float = 60.0) -> float:
    """Half of systemd's WatchdogSec (passed as WATCHDOG_USEC), else `default`."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    return int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 else default


class ServiceScheduler(BackgroundScheduler):
    """APScheduler's background scheduler, safe to stop from another thread.

    Its shutdown marks the scheduler stopped at once; a pass over the due jobs running then
    on the scheduler's thread looks for a job it just ran among the stopped scheduler's
    pending ones and dies with a JobLookupError (a traceback). Stopping under the job-store
    lock, which every pass holds, puts the stop between two passes; the stop empties the
    store, so a later pass finds nothing to run.
    """

    def shutdown(self, wait: bool = True) -> None:
        with self._jobstores_lock:
            BaseScheduler.shutdown(self, wait)
        self.wakeup()  # the rest of BackgroundScheduler.shutdown: end its thread's wait
        self._thread.join()


def make_scheduler(cls: type[BaseScheduler] = ServiceScheduler, executors: Any = None) -> Any:
    executors = executors or {"default": ThreadPoolExecutor(1), "plan": ThreadPoolExecutor(1)}
    return cls(executors=executors, job_defaults=JOB_DEFAULTS, timezone=UTC)


class Service:
    """The plan's jobs. `start()` installs them; the scheduler decides when they run."""

    def __init__(
        self,
        opened: Opened,
        channel_factory: Callable[[], Channel],
        *,
        scheduler: Any = None,
        clock: Clock = utc_now,
        free_bytes: Callable[[Path], int] = files.free_bytes,
        chooser: Callable[[], StoryChooser] | None = None,
        sleep: Callable[[float], None] = _time.sleep,
        notify: Callable[[str], Any] = sd_notify,
        heartbeat_seconds: float | None = None,
    ) -> None:
        self.opened, self.db, self.channel_factory = opened, opened.db, channel_factory
        self.recorder = opened.recorder
        self.cfg = opened.protocol.schedule
        self.participant = opened.participant
        # The model's chooser in the product (handed in by the wiring); lexical otherwise.
        self.chooser = chooser or (lambda: StoryChooser(LexicalMatcher()))
        self.tz = ZoneInfo(self.participant.timezone)
        self.scheduler = scheduler if scheduler is not None else make_scheduler()
        self.clock, self.free_bytes, self.sleep, self.notify = clock, free_bytes, sleep, notify
        self.heartbeat_seconds = heartbeat_seconds or heartbeat_interval()
        self.slots: dict[str, Slot] = {}

    # -- start-up checks -----------------------------------------------------------------
    def prepare(self) -> None:
        """Integrity, clock sanity, crash recovery. Raises DatabaseError if the db is damaged."""
        ok, detail = integrity_ok(self.db)
        if not ok:
            log_event(self.db, "integrity_failed", detail, level="error")
            raise DatabaseError(
                f"{self.opened.home.db_path}: integrity check failed ({detail}); "
                "not scheduling; restore a backup"
            )
        warned = False
        while problem := clock.clock_problem(self.clock(), queries.last_event_at(self.db)):
            if not warned:
                log_event(self.db, "clock_suspect", problem + "; waiting", level="warning")
                self.notify(f"STATUS=waiting for a plausible clock: {problem}")
                warned = True
            self.sleep(60)  # a blocking wait; NTP will fix the clock
        record_protocol(self.db, self.opened.protocol, self.clock())  # missed rows name it
        try:
            with session_lock(self.opened.home):
                queries.recover_interrupted(self.db, self.clock)
        except SessionBusyError:
            log.info("a session is running in another process; not recovering now")
        enrolled = queries.enrolled_at(self.db, self.participant.id)
        assert enrolled is not None, "open_home records the participant"
        self.slots = {
            s.key: s
            for s in schedule.study_slots(self.cfg, enrolled, self.tz, self.participant.seed)
        }
        log_event(self.db, "service_started", f"{len(self.slots)} study slots", at=self.clock())

    def start(self) -> None:
        """Checks, then jobs; `scheduler.start()` afterwards."""
        self.prepare()
        add = self.scheduler.add_job
        add(self.replan, CronTrigger(hour=0, minute=0, second=30, timezone=self.tz),
            id="replan", executor="plan")  # fmt: skip
        add(self.heartbeat, IntervalTrigger(seconds=self.heartbeat_seconds), id="heartbeat",
            misfire_grace_time=int(self.heartbeat_seconds) + 1)  # fmt: skip
        t = self.cfg.backup_time
        add(self.backup, CronTrigger(hour=t.hour, minute=t.minute, timezone=self.tz),
            id="backup", executor="plan")  # fmt: skip
        add(self.replan, DateTrigger(self.clock()), id="replan-now", executor="plan")

    def heartbeat(self) -> None:
        self.notify("WATCHDOG=1")

    # -- the plan ------------------------------------------------------------------------
    def state(self, slot: Slot) -> str:
        return slots.state(self.db, self.participant.id, slot, self.cfg.max_per_day)

    def replan(self) -> None:
        """Close past slots as missed, and schedule the coming ones (today and tomorrow)."""
        now = self.clock()
        horizon = now + timedelta(days=2)
        for slot in self.slots.values():
            if slot.end <= now:
                if self.state(slot) == "open":
                    self.mark_missed(slot, schedule.missed_reason(slots.history(self.db, slot)))
            elif slot.start < horizon:
                self.scheduler.add_job(self.window_end, DateTrigger(slot.end), args=[slot.key],
                                       id=f"end:{slot.key}", executor="plan",
                                       replace_existing=True)  # fmt: skip
                self.plan_invitation(slot, now)

    def plan_invitation(self, slot: Slot, now: datetime) -> None:
        history = slots.history(self.db, slot)
        due = schedule.next_attempt(self.cfg, slot, history, now, self.tz)
        if due is None or self.state(slot) != "open":
            return
        self.scheduler.add_job(self.invite, DateTrigger(due), args=[slot.key],
                               id=f"invite:{slot.key}:{len(history)}", executor="plan",
                               replace_existing=True)  # fmt: skip

    def window_end(self, key: str) -> None:
        slot = self.slots[key]
        if self.clock() < slot.end:  # the clock went back: wait for the real end
            self.scheduler.add_job(self.window_end, DateTrigger(slot.end), args=[key],
                                   id=f"end:{key}", executor="plan",
                                   replace_existing=True)  # fmt: skip
            return
        if self.state(slot) == "open":
            self.mark_missed(slot, schedule.missed_reason(slots.history(self.db, slot)))

    def invite(self, key: str) -> None:
        slot, now = self.slots[key], self.clock()
        if self.state(slot) != "open":
            return
        history = slots.history(self.db, slot)
        due = schedule.next_attempt(self.cfg, slot, history, now, self.tz)
        if due is None:
            return
        if due > now + timedelta(seconds=1):  # quiet hours, or the clock went back
            self.plan_invitation(slot, now)
            return
        recorded: list[int] = []

        def accepted(session_id: int) -> None:
            # Stored as the session starts, so a session cut short by a kill or power cut is
            # still counted as the scheduled one it was.
            queries.record_invitation(self.db, key, "accepted", now, session_id)
            recorded.append(session_id)

        outcome, session_id = self.invite_and_run(accepted)
        if not recorded:
            queries.record_invitation(self.db, key, outcome, now, session_id)
        if outcome in ("declined", "disk_full") and self.state(slot) == "open":
            self.mark_missed(slot, outcome)
        else:
            self.plan_invitation(slot, self.clock())

    def invite_and_run(
        self, on_start: Callable[[int], None] | None = None
    ) -> tuple[str, int | None]:
        """The invitation exchange, and the session if the participant says yes."""
        if not self.disk_ok():
            return "disk_full", None
        try:
            with session_lock(self.opened.home):
                channel = self.channel_factory()
                try:
                    channel.say(self.opened.protocol.wording("invitation",
                                                             name=self.participant.name))
                    words = self.opened.protocol.answer_words
                    expect = Expectation("answer", words.invite_vocabulary,
                                         max_seconds=self.cfg.answer_seconds,
                                         hedges=words.spoken_hedges)  # fmt: skip
                    heard = channel.listen(expect).text
                    outcome = schedule.classify_reply(heard, words)
                    if outcome == "snoozed":
                        channel.say(self.opened.protocol.wording(
                            "invitation_snoozed", name=self.participant.name,
                            minutes=self.cfg.snooze_minutes))  # fmt: skip
                    elif outcome == "declined":
                        channel.say(self.opened.protocol.wording(
                            "invitation_declined", name=self.participant.name))  # fmt: skip
                    elif outcome == "accepted":
                        return outcome, self.run_session(channel, on_start)
                finally:
                    channel.close()
                return outcome, None
        except EndOfInput:
            return "no_answer", None
        except SessionBusyError:
            return "busy", None
        except Exception as exc:  # a broken microphone must not stop tomorrow's session
            log.exception("invitation failed")
            log_event(self.db, "invitation_error", f"{type(exc).__name__}: {exc}", level="error")
            return "error", None

    def run_session(self, channel: Channel, on_start: Callable[[int], None] | None = None) -> int:
        result = run_session(self.recorder, self.opened.protocol, channel, self.participant,
                             self.chooser(), clock=self.clock,
                             on_start=on_start)  # fmt: skip
        return result.session_id

    def manual_session(self) -> None:
        """A session the participant asked for outside the schedule (a line in the terminal)."""
        if not self.disk_ok():
            return
        try:
            with session_lock(self.opened.home):
                self.run_session(self.channel_factory())
        except SessionBusyError:
            log.warning("a session is already running")

    def disk_ok(self) -> bool:
        free = self.free_bytes(self.opened.home.path)
        if free >= self.cfg.min_free_mb * 1024 * 1024:
            return True
        need = self.cfg.min_free_mb
        detail = f"{free // (1024 * 1024)} MB free, need {need} MB; no session"
        log_event(self.db, "disk_low", detail, level="warning", at=self.clock())
        return False

    def mark_missed(self, slot: Slot, reason: str) -> None:
        p, protocol = self.participant, self.opened.protocol
        # Re-checked inside the write lock: another process may have just started one.
        session_id = self.recorder.missed(
            lambda: self.state(slot) == "open", p.id, protocol.id, protocol.version, reason,
            slot.start, slot.end, p.timezone, slot.local_date,
        )  # fmt: skip
        if session_id is None:
            return
        log_event(self.db, "session_missed", f"{slot.key} {reason}",
                  session_id=session_id, at=self.clock())  # fmt: skip

    def backup(self) -> None:
        try:
            backup.backup_now(self.db, self.opened.home, keep=self.cfg.backups_keep,
                              clock=self.clock)  # fmt: skip
        except Exception as exc:  # a full disk must not stop the service
            log.exception("backup failed")
            log_event(self.db, "backup_failed", f"{type(exc).__name__}: {exc}", level="error")


class StopRequest:
    """SIGTERM/SIGINT as a byte on a pipe, which the main thread waits for.

    A handler runs in the main thread between two bytecodes, wherever that thread is: inside
    a thread pool's submit(), which holds the pool's non-reentrant lock, a handler that shut
    the scheduler down waited on that lock, held by itself, for ever. So the handler only
    notes the signal (an attribute takes no lock); the main thread does the stopping.
    The byte is written by the interpreter's C-level handler (signal.set_wakeup_fd) in
    whichever thread the kernel gave the signal to: a signal taken by another thread does
    not interrupt the main thread's read, so a byte from the Python handler never came.
    """

    STOPS = frozenset({signal.SIGTERM, signal.SIGINT})

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # set_wakeup_fd's condition: it never blocks
        self.signum: int | None = None

    def install(self) -> None:
        signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for signum in self.STOPS:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signum = signum

    def wait(self) -> int:
        """Block until SIGTERM or SIGINT; returns its number."""
        while (signum := os.read(self._read, 1)[0]) not in self.STOPS:
            pass
        return signum


def serve(
    opened: Opened,
    stdin: Any,
    stdout: Any,
    channel_factory: Callable[[], Channel] | None = None,
    chooser: Callable[[], StoryChooser] | None = None,
) -> None:
    """Run the service in the foreground until SIGTERM/SIGINT (the `companion run` command).

    channel_factory: how to talk to the participant (e.g. microphone and speaker);
    None = text on stdin/stdout. A line on stdin starts a session either way.
    chooser: the story chooser (the on-device model's, from the wiring).
    """
    import threading

    plan = ThreadPoolExecutor(1)
    scheduler = make_scheduler(executors={"default": ThreadPoolExecutor(1), "plan": plan})
    holder: dict[str, Service] = {}
    inbox = LineInbox(
        stdin,
        lambda: scheduler.add_job(
            holder["service"].manual_session, executor="plan", id="manual", replace_existing=True
        ),  # fmt: skip
    )
    factory = channel_factory or (lambda: inbox.channel(stdout))
    service = Service(opened, factory, scheduler=scheduler, chooser=chooser)
    holder["service"] = service
    service.start()  # a SIGTERM until here: companion.cli.stop_at_once ends the process

    stop = StopRequest()
    stop.install()
    signum = stop.signum
    if signum is None:
        inbox.start()
        scheduler.start()  # its own thread
        sd_notify("READY=1")
        sd_notify(f"STATUS=scheduling {len(service.slots)} study slots")
        signum = stop.wait()
    log.info("signal %s: stopping", signum)
    sd_notify("STOPPING=1")
    inbox.stop()  # a running text session ends as interrupted, answers kept
    if scheduler.running:
        scheduler.shutdown(wait=False)  # no new jobs; the running one goes on
    # Let a session that saw end of input record its end, but not for ever.
    wind_down = threading.Thread(target=plan.shutdown, name="wind-down", daemon=True)
    wind_down.start()
    wind_down.join(STOP_GRACE_S)
    if wind_down.is_alive():
        log.warning("a job was still running %.0f s after the stop; leaving it", STOP_GRACE_S)
        os._exit(0)  # exiting normally would wait for its thread
    log_event(opened.db, "service_stopped", "")
